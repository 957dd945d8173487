package batch

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many writers submit at once, over and over: every item is run exactly
// once, in a batch run by one leader at a time, and a submit returns only
// once its item was run.
func TestEveryItemRunsOnceAndBatchesDoNotOverlap(t *testing.T) {
	q := &Queue[string]{Linger: time.Millisecond}
	var mu sync.Mutex
	ran := map[string]int{}
	var running atomic.Int32
	run := func(items []string) {
		if running.Add(1) != 1 {
			t.Error("two batches ran at once")
		}
		mu.Lock()
		for _, it := range items {
			ran[it]++
		}
		mu.Unlock()
		running.Add(-1)
	}
	const writers, each = 16, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				item := fmt.Sprintf("%d-%d", w, i)
				q.Submit(fmt.Sprint(w), item, run)
				mu.Lock()
				n := ran[item]
				mu.Unlock()
				if n != 1 {
					t.Errorf("submit of %s returned with it run %d times", item, n)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(ran) != writers*each {
		t.Fatalf("%d items ran, want %d", len(ran), writers*each)
	}
	for it, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", it, n)
		}
	}
}

// Items submitted while a batch runs wait, and go together in the next.
func TestItemsThatComeMeanwhileGoTogether(t *testing.T) {
	q := &Queue[int]{}
	const others = 7
	var batches [][]int
	run := func(items []int) {
		batches = append(batches, items)
		if len(batches) > 1 {
			return
		}
		// The first batch holds the lead until every other item waits.
		waitUntilQueued(q, others)
	}
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		q.Submit("first", 0, func(items []int) { close(started); run(items) })
	})
	<-started
	for i := 1; i <= others; i++ {
		wg.Go(func() { q.Submit(fmt.Sprint(i), i, run) })
	}
	wg.Wait()
	if len(batches) != 2 || len(batches[0]) != 1 || len(batches[1]) != others {
		t.Fatalf("batches %v, want the first alone and the %d others together", batches, others)
	}
}

// A batch waits for the writers writing now, not only for as many as the
// last batch held: a writer counts while it wrote within ActiveWindow.
func TestWritersWritingNowAreCounted(t *testing.T) {
	var q Queue[int]
	for _, w := range []string{"a", "b", "c", "a"} {
		q.wrote(w)
	}
	if got := q.writing(); got != 3 {
		t.Errorf("three writers wrote just now; counted %d", got)
	}
	q.lastWrote["b"] = time.Now().Add(-2 * ActiveWindow)
	if got := q.writing(); got != 2 {
		t.Errorf("one writer stopped; counted %d writing, want 2", got)
	}
	if _, kept := q.lastWrote["b"]; kept {
		t.Error("a writer that stopped is still remembered")
	}
}

// A batch run again takes along the items that queued meanwhile (Join),
// as many as it asks for: they return once that batch ran, and the
// others wait for the next batch, which runs them once.
func TestARunningBatchTakesAlongItemsThatCameMeanwhile(t *testing.T) {
	q := &Queue[int]{}
	const others, taken = 6, 4
	var batches [][]int
	var joined []int
	run := func(items []int) {
		batches = append(batches, items)
		if len(batches) > 1 {
			return
		}
		waitUntilQueued(q, others)
		joined = q.Join(taken)
		if more := q.Join(0); len(more) != 0 {
			t.Errorf("a join of none took %v", more)
		}
	}
	started := make(chan struct{})
	returned := make(chan int, others)
	var wg sync.WaitGroup
	wg.Go(func() {
		q.Submit("first", 0, func(items []int) { close(started); run(items) })
	})
	<-started
	for i := 1; i <= others; i++ {
		wg.Go(func() {
			q.Submit(fmt.Sprint(i), i, run)
			returned <- i
		})
	}
	wg.Wait()
	close(returned)
	if len(joined) != taken || len(batches) != 2 || len(batches[1]) != others-taken {
		t.Fatalf("joined %v, batches %v: want %d taken along and the other %d in a second batch", joined, batches, taken, others-taken)
	}
	ran := map[int]int{}
	for _, it := range append(append(slices.Clone(batches[0]), joined...), batches[1]...) {
		ran[it]++
	}
	for i := 0; i <= others; i++ {
		if ran[i] != 1 {
			t.Errorf("item %d ran %d times", i, ran[i])
		}
	}
	if n := len(returned); n != others {
		t.Errorf("%d submits returned, want %d", n, others)
	}
}

// waitUntilQueued waits until n items wait in q.
func waitUntilQueued[T any](q *Queue[T], n int) {
	for {
		q.mu.Lock()
		queued := len(q.waiting)
		q.mu.Unlock()
		if queued == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
