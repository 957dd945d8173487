package meaning

import (
	"testing"
)

// A question finds the note written in other words: the vectors of texts
// about the same thing are closer than those of texts about other things.
func TestRelatedTextsAreCloser(t *testing.T) {
	for _, c := range []struct{ q, near, far string }{
		{"why did checkout get slower", "latency of the payment service rose after the deploy", "the team planted trees in the park"},
		{"database replicas lag behind", "postgres replication delay grew to seconds", "a recipe for chocolate cake"},
		{"who owns the login page", "the authentication screen is maintained by the identity team", "rainfall in the region doubled this year"},
	} {
		q, ok := Embed(c.q)
		if !ok {
			t.Fatalf("no vector for %q", c.q)
		}
		near, _ := Embed(c.near)
		far, _ := Embed(c.far)
		cn, cf := Cosine(Dot(&q, &near)), Cosine(Dot(&q, &far))
		t.Logf("%q: %.3f near, %.3f far", c.q, cn, cf)
		if cn <= cf {
			t.Errorf("%q is closer to %q (%.3f) than to %q (%.3f)", c.q, c.far, cf, c.near, cn)
		}
	}
}

func TestVectorsAreUnitLength(t *testing.T) {
	v, ok := Embed("The LRU cache is undersized: 4 GB for 9 GB of keys.")
	if !ok {
		t.Fatal("no vector")
	}
	if c := Cosine(Dot(&v, &v)); c < 0.97 || c > 1.03 {
		t.Errorf("a vector with itself: %.3f", c)
	}
	if _, ok := Embed("zzqxv_qqwvz9 --- xqzzt"); ok {
		t.Error("a text of unknown words has a vector")
	}
	if _, ok := Embed(""); ok {
		t.Error("the empty text has a vector")
	}
}

func BenchmarkEmbedNote(b *testing.B) {
	text := ""
	for range 30 {
		text += "The cache hit rate of the payment service fell after the deploy of version 2.4.7. "
	}
	Embed(text) // the table is read once
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Embed(text)
	}
}
