//go:build !amd64

package meaning

func dots(q *Vector, vs []Vector, out []int32) { dotsGo(q, vs, out) }
