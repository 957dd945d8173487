package o200k

import "container/heap"

// heapFrom is the piece length from which merging keeps its candidates in a
// heap: a scan for the lowest rank costs a pass a merge, too much for long
// runs of spaces or symbols.
const heapFrom = 96

// mergeScan counts the tokens of piece: it merges the leftmost pair of
// neighbouring parts whose joined bytes have the lowest rank, until no pair
// is a token.
func (v *vocabulary) mergeScan(piece string) int {
	type boundary struct {
		start int
		rank  uint32 // of the bytes from start to the boundary after next
	}
	var buf [heapFrom + 1]boundary
	parts := buf[:len(piece)+1]
	rankAt := func(i int) uint32 {
		if i+2 >= len(parts) {
			return noRank
		}
		return v.rank(piece[parts[i].start:parts[i+2].start])
	}
	for i := range parts {
		parts[i].start = i
	}
	for i := range parts {
		parts[i].rank = rankAt(i)
	}
	for len(parts) > 2 {
		best, at := uint32(noRank), -1
		for i, p := range parts[:len(parts)-2] {
			if p.rank < best {
				best, at = p.rank, i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = rankAt(at)
		if at > 0 {
			parts[at-1].rank = rankAt(at - 1)
		}
	}
	return len(parts) - 1
}

// mergeHeap counts as mergeScan does, the parts in a linked list and the
// candidate merges in a heap ordered by rank, then position.
func (v *vocabulary) mergeHeap(piece string) int {
	n := len(piece)
	next := make([]int, n+1) // the boundary after, -1 past the last
	prev := make([]int, n+1)
	rank := make([]uint32, n+1) // of merging from here to the boundary after next
	for i := range next {
		next[i], prev[i], rank[i] = i+1, i-1, noRank
	}
	next[n] = -1
	rankAt := func(i int) uint32 {
		j := next[i]
		if j < 0 || next[j] < 0 {
			return noRank
		}
		return v.rank(piece[i:next[j]])
	}
	h := &candidates{}
	for i := 0; i+2 <= n; i++ {
		if rank[i] = rankAt(i); rank[i] != noRank {
			*h = append(*h, candidate{rank[i], i})
		}
	}
	heap.Init(h)
	count := n
	for h.Len() > 0 {
		c := heap.Pop(h).(candidate)
		if rank[c.at] != c.rank {
			continue // stale: its neighbours changed since
		}
		gone := next[c.at]
		next[c.at] = next[gone]
		if next[gone] >= 0 {
			prev[next[gone]] = c.at
		}
		rank[gone] = noRank
		count--
		for _, i := range []int{c.at, prev[c.at]} {
			if i < 0 {
				continue
			}
			if rank[i] = rankAt(i); rank[i] != noRank {
				heap.Push(h, candidate{rank[i], i})
			}
		}
	}
	return count
}

type candidate struct {
	rank uint32
	at   int
}

type candidates []candidate

func (h candidates) Len() int { return len(h) }
func (h candidates) Less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].at < h[j].at
}
func (h candidates) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candidates) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *candidates) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
