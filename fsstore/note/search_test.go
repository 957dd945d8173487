package note

import (
	"strings"
	"testing"
)

func TestIdentifiers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"shipped deploy-v2.4.7-hotfix on Monday", "deploy-v2.4.7-hotfix"},
		{"ERR_CONN_RESET, then cache_test.go.", "ERR_CONN_RESET cache_test.go"},
		{"v2.4.7", "v2.4.7"},
		{"plain words only", ""},
		{"trailing. dot-", ""},
		{"a--b a-b-", "a-b"},
		{"bb://acme/r/old", "acme/r/old"},
		{"é-漢字 x", "é-漢字"},
	}
	for _, tt := range tests {
		var got []string
		Identifiers(tt.in, func(id string) { got = append(got, id) })
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("Identifiers(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}
