package meaning

// Dots sets out[i] to Dot(q, &vs[i]) for each of vs; out is at least as
// long as vs. A search by meaning takes the dot product of its question
// with every note's vector: on 100,000 notes, one at a time in Go, that
// is about 11 ms of CPU a question, so the products are taken a run of
// vectors at a time, in SIMD where the processor has it (dots_amd64.s).
func Dots(q *Vector, vs []Vector, out []int32) {
	if len(vs) == 0 {
		return
	}
	_ = out[len(vs)-1]
	dots(q, vs, out)
}

// widened is a query's vector as 16-bit numbers, padded with zeros to a
// whole number of 8-number lanes: what the SIMD kernel multiplies with.
type widened [widenedDims]int16

const widenedDims = (Dims + 7) / 8 * 8

func widen(q *Vector) *widened {
	var w widened
	for i, x := range q {
		w[i] = int16(x)
	}
	return &w
}

// dotsGo is Dots, one product after the other.
func dotsGo(q *Vector, vs []Vector, out []int32) {
	for i := range vs {
		out[i] = Dot(q, &vs[i])
	}
}
