package meaning

// stopWords are English words that say how a question is asked, not what
// it is about: a full-text search for them matches nearly every note.
var stopWords = map[string]bool{}

func init() {
	for _, w := range []string{
		"a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "as", "at",
		"be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
		"does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he",
		"her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its",
		"itself", "just", "me", "might", "more", "most", "must", "my", "myself", "no", "nor", "not", "now", "of", "off",
		"on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shall",
		"she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then",
		"there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "upon", "us", "very",
		"was", "we", "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will",
		"with", "within", "without", "would", "you", "your", "yours", "yourself", "yourselves",
	} {
		stopWords[w] = true
	}
}

// IsStopWord reports whether word (lower case) only says how a question is
// asked: "what", "the", "why".
func IsStopWord(word string) bool { return stopWords[word] }
