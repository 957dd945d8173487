package meaning

import (
	"math/rand/v2"
	"testing"
)

func randomVectors(rng *rand.Rand, n int) []Vector {
	vs := make([]Vector, n)
	for i := range vs {
		for d := range Dims {
			switch rng.IntN(10) {
			case 0:
				vs[i][d] = -128 // the extremes, where a product is largest
			case 1:
				vs[i][d] = 127
			default:
				vs[i][d] = int8(rng.IntN(256) - 128)
			}
		}
	}
	return vs
}

// Dots, however the processor takes them, gives Dot's products, on random
// vectors and runs of every length up to a few hundred.
func TestDotsAgreeWithDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		vs := randomVectors(rng, trial*3)
		q := randomVectors(rng, 1)[0]
		got := make([]int32, len(vs))
		Dots(&q, vs, got)
		for i := range vs {
			if want := Dot(&q, &vs[i]); got[i] != want {
				t.Fatalf("trial %d: Dots[%d] = %d, Dot = %d", trial, i, got[i], want)
			}
		}
	}
}

func BenchmarkDots(b *testing.B) {
	vs := randomVectors(rand.New(rand.NewPCG(3, 4)), 100_000)
	out := make([]int32, len(vs))
	for _, way := range []struct {
		name string
		dots func(*Vector, []Vector, []int32)
	}{{"one-at-a-time", dotsGo}, {"Dots", Dots}} {
		b.Run(way.name, func(b *testing.B) {
			for b.Loop() {
				way.dots(&vs[7], vs, out)
			}
		})
	}
}
