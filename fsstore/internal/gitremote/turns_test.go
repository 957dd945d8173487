package gitremote

import (
	"testing"
	"time"
)

// A clone announces its turn only once it keeps losing: after
// announceAfter races in a row, or starveAfter since the first of them.
// A race won starts the count again.
func TestTurnAnnouncedOnlyWhenStarved(t *testing.T) {
	var tr turns
	for i := 1; i < announceAfter; i++ {
		if tr.lost(); tr.starved() {
			t.Fatalf("starved after %d races lost in a row at once, want %d", i, announceAfter)
		}
	}
	if tr.lost(); !tr.starved() {
		t.Fatalf("not starved after %d races lost in a row", announceAfter)
	}
	tr.won()
	tr.lost()
	if tr.starved() {
		t.Fatal("starved after one race lost, once a race was won")
	}
	tr.firstLostAt = time.Now().Add(-starveAfter)
	if !tr.starved() {
		t.Fatalf("not starved %s after the first race lost", starveAfter)
	}
}
