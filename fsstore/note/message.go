package note

import (
	"strconv"
	"strings"
)

// The trailers of every commit the program makes. Blackboard-Agent is on
// all of them: a commit without it is a person's own git commit.
const (
	TrailerURI     = "Blackboard-Uri"
	TrailerVersion = "Blackboard-Version"
	TrailerAgent   = "Blackboard-Agent"
	// TrailerBy says "person" on the writes a person made through the
	// program (the page): the author is then a person, not an agent.
	TrailerBy = "Blackboard-By"
	// TrailerSaved names, on a commit of a person's save that was merged,
	// the save as they made it ("<path> <blob>"; git holds the blob): a
	// later save made from the same buffer finds it as its base.
	TrailerSaved = "Blackboard-Saved"
	// TrailerMerged names, on the merge of a save a person committed with
	// git, that commit: it is merged once.
	TrailerMerged = "Blackboard-Merged"
	// TrailerWrite is the id a relay gave the tool write: a write sent
	// again to a new engine, after the last died, finds its commit by it
	// and is answered as done, never applied twice.
	TrailerWrite = "Blackboard-Write"
)

// maxSubjectRunes bounds the text after a subject's head (a digest, a
// link's targets), so `git log --oneline` stays one screen line or so.
const maxSubjectRunes = 100

// Message is the commit message of a change the program commits: a tool
// write, people's edits, init. `git log` then reads the same for all of
// them: a subject that says what happened, with the digest, and trailers.
type Message struct {
	Subject string
	// Lines are the body's lines between the subject and the trailers (the
	// notes of a commit of several people's edits).
	Lines []string
	// URI and Version name the one note the commit is about; URI is ""
	// when it is about several.
	URI     string
	Version int
	// Agent is who wrote the change: an agent's name, or the person's.
	Agent string
	// Person marks a write a person made through the program (TrailerBy).
	Person bool
	// Saved are the TrailerSaved values: "<path> <blob>".
	Saved []string
	// Merged are the TrailerMerged values: commits.
	Merged []string
	// WriteID is the TrailerWrite value, "" for none.
	WriteID string
}

// String is the message as git stores it.
func (m Message) String() string {
	var b strings.Builder
	b.WriteString(m.Subject)
	b.WriteString("\n\n")
	for _, l := range m.Lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(m.Lines) > 0 {
		b.WriteByte('\n')
	}
	if m.URI != "" {
		b.WriteString(TrailerURI + ": " + m.URI + "\n")
		b.WriteString(TrailerVersion + ": " + strconv.Itoa(m.Version) + "\n")
	}
	b.WriteString(TrailerAgent + ": " + m.Agent + "\n")
	if m.Person {
		b.WriteString(TrailerBy + ": person\n")
	}
	for _, saved := range m.Saved {
		b.WriteString(TrailerSaved + ": " + saved + "\n")
	}
	for _, merged := range m.Merged {
		b.WriteString(TrailerMerged + ": " + merged + "\n")
	}
	if m.WriteID != "" {
		b.WriteString(TrailerWrite + ": " + m.WriteID + "\n")
	}
	return b.String()
}

// MergedIn reads the TrailerMerged values of a message.
func MergedIn(message string) []string { return trailers(message, TrailerMerged) }

// WriteIDOf reads the TrailerWrite value of a message, "" for none.
func WriteIDOf(message string) string {
	id, _ := trailer(message, TrailerWrite)
	return id
}

// SavedAt reads the TrailerSaved values of a message that name path: the
// blobs of a person's saves of it, as they made them.
func SavedAt(message, path string) []string {
	var out []string
	for _, value := range trailers(message, TrailerSaved) {
		if p, blob, ok := strings.Cut(value, " "); ok && p == path {
			out = append(out, blob)
		}
	}
	return out
}

// trailers is the values of every line "name: value" of a message.
func trailers(message, name string) []string {
	var out []string
	for _, line := range strings.Split(message, "\n") {
		if value, ok := strings.CutPrefix(line, name+": "); ok {
			out = append(out, strings.TrimSpace(value))
		}
	}
	return out
}

// Subject joins a subject's head ("update research/x v3") and what the
// change holds (the digest), cut to 100 characters; text "" leaves the head
// alone.
func Subject(head, text string) string {
	if text == "" {
		return head
	}
	if r := []rune(text); len(r) > maxSubjectRunes {
		text = string(r[:maxSubjectRunes-1]) + "…"
	}
	return head + ": " + text
}

// WriteMessage is the message of one tool write (op is update, append or
// link) of the note at a, now at version, by agent.
func WriteMessage(op string, a Address, version int, text, agent string) Message {
	return Message{Subject: Subject(op+" "+a.Short()+" v"+strconv.Itoa(version), text),
		URI: a.String(), Version: version, Agent: agent}
}

// ByProgram reports whether a commit message is one the program wrote: it
// carries the Blackboard-Agent trailer.
func ByProgram(message string) bool {
	return strings.Contains(message, "\n"+TrailerAgent+": ")
}

// WrittenAt reads the note and version a tool write's message names (its
// Blackboard-Uri and Blackboard-Version trailers); ok is false for a
// message without them (a person's commit, people's edits of several
// notes, init).
func WrittenAt(message string) (uri string, version int, ok bool) {
	uri, ok = trailer(message, TrailerURI)
	if !ok {
		return "", 0, false
	}
	v, ok := trailer(message, TrailerVersion)
	if !ok {
		return "", 0, false
	}
	version, err := strconv.Atoi(v)
	if err != nil || version < 1 {
		return "", 0, false
	}
	return uri, version, true
}

// trailer is the value of the last line "name: value" of a message.
func trailer(message, name string) (string, bool) {
	i := strings.LastIndex(message, "\n"+name+": ")
	if i < 0 {
		return "", false
	}
	value, _, _ := strings.Cut(message[i+len(name)+3:], "\n")
	return strings.TrimSpace(value), value != ""
}
