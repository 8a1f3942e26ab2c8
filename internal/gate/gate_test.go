package gate

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestCloseWaitsAndRefuses(t *testing.T) {
	var g Gate
	closed := errors.New("closed")
	if err := g.Enter(closed); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		g.Close()
		done.Store(true)
		close(finished)
	}()
	// Close waits for the operation inside.
	time.Sleep(20 * time.Millisecond)
	if done.Load() {
		t.Fatal("Close returned with an operation inside")
	}
	g.Exit()
	<-finished
	if err := g.Enter(closed); !errors.Is(err, closed) {
		t.Fatalf("Enter after Close: %v", err)
	}
}
