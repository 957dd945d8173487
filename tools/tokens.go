package tools

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// o200k is the o200k_base encoding (GPT-4o and later), loaded on first use:
// it takes tens of milliseconds, which a server answering tools/list does not
// need to spend.
var o200k = sync.OnceValues(func() (tokenizer.Codec, error) {
	return tokenizer.Get(tokenizer.O200kBase)
})

// CountTokens returns the number of o200k_base tokens in s.
func CountTokens(s string) int {
	codec, err := o200k()
	if err != nil {
		// The encoding is compiled in; this cannot happen. Fall back to an
		// overestimate so budgets still hold.
		return len(s)/3 + 1
	}
	n, err := codec.Count(s)
	if err != nil {
		return len(s)/3 + 1
	}
	return n
}
