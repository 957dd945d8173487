package meaning

// dots takes the products in SSE2, which every amd64 processor has.
func dots(q *Vector, vs []Vector, out []int32) {
	dotsSSE2(widen(q), &vs[0], len(vs), &out[0])
}

// dotsSSE2 sets out[i] to the dot product of q and the i-th of the n
// vectors from v.
//
//go:noescape
func dotsSSE2(q *widened, v *Vector, n int, out *int32)

// The kernel is written for vectors of 100 numbers.
var _ [Dims - 100]struct{}
var _ [100 - Dims]struct{}
