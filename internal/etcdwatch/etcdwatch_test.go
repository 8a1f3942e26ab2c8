package etcdwatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/internal/backoff"
)

// The packages that use the loop (cluster/membership, metadata) test it
// against a real embedded etcd; this fake pins down the loop's own rules:
// where each watch starts, and when it reads the prefix again.

// stream is one Watch call: the revision it starts at and its input.
type stream struct {
	rev int64
	in  chan clientv3.WatchResponse // the test sends; close ends the stream
}

type fakeClient struct {
	mu      sync.Mutex
	rev     int64 // revision of the next Get
	watches chan stream
}

func (f *fakeClient) setRev(r int64) {
	f.mu.Lock()
	f.rev = r
	f.mu.Unlock()
}

func (f *fakeClient) Get(context.Context, string, ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &clientv3.GetResponse{Header: &etcdserverpb.ResponseHeader{Revision: f.rev}}, nil
}

// Watch hands the stream to the test and forwards what it sends until the
// stream's input closes or ctx ends, then closes the channel, as clientv3
// does.
func (f *fakeClient) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	s := stream{rev: clientv3.OpGet(key, opts...).Rev(), in: make(chan clientv3.WatchResponse)}
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case r, ok := <-s.in:
				if !ok {
					return
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	f.watches <- s
	return out
}

func put(rev int64) clientv3.WatchResponse {
	return clientv3.WatchResponse{Events: []*clientv3.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("/p/k"), ModRevision: rev}}}}
}

func next(t *testing.T, f *fakeClient) stream {
	t.Helper()
	select {
	case s := <-f.watches:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a watch")
		return stream{}
	}
}

func start(t *testing.T, resume bool) (*fakeClient, *Loop, chan []*clientv3.Event) {
	f := &fakeClient{rev: 10, watches: make(chan stream)}
	events := make(chan []*clientv3.Event, 16)
	l := Start(t.Context(), Config{
		Client: f, Prefix: "/p/", GetTimeout: time.Minute,
		OnGet:             func(*clientv3.GetResponse) {},
		OnEvents:          func(evs []*clientv3.Event) { events <- evs },
		Backoff:           backoff.Policy{Base: time.Microsecond, Max: time.Microsecond},
		ResumeOnStreamEnd: resume,
	})
	t.Cleanup(l.Stop)
	return f, l, events
}

func TestLoopResumesAfterStreamEnd(t *testing.T) {
	f, l, events := start(t, true)
	s := next(t, f)
	if s.rev != 11 || l.Gets.Load() != 1 {
		t.Fatalf("first watch at %d after %d gets, want 11 after 1", s.rev, l.Gets.Load())
	}
	s.in <- put(12)
	if evs := <-events; evs[0].Kv.ModRevision != 12 {
		t.Fatalf("events %v", evs)
	}
	close(s.in) // the stream ends without an error
	if s = next(t, f); s.rev != 13 || l.Gets.Load() != 1 {
		t.Fatalf("resumed at %d after %d gets, want 13 without a get", s.rev, l.Gets.Load())
	}

	// Compaction: read again, watch from the new read.
	f.setRev(20)
	s.in <- clientv3.WatchResponse{CompactRevision: 15}
	if s = next(t, f); s.rev != 21 || l.Gets.Load() != 2 || l.Compacted.Load() != 1 {
		t.Fatalf("after compaction: watch at %d, %d gets, %d compactions", s.rev, l.Gets.Load(), l.Compacted.Load())
	}
	// Another watch error: read again (after a backoff wait).
	f.setRev(30)
	s.in <- clientv3.WatchResponse{Canceled: true}
	if s = next(t, f); s.rev != 31 || l.Gets.Load() != 3 {
		t.Fatalf("after a watch error: watch at %d, %d gets", s.rev, l.Gets.Load())
	}
	// BreakStream ends the stream like a network failure.
	if !l.BreakStream() {
		t.Fatal("no stream to break")
	}
	if s = next(t, f); s.rev != 31 || l.Gets.Load() != 3 {
		t.Fatalf("after a break: watch at %d, %d gets", s.rev, l.Gets.Load())
	}
	l.Stop()
	if l.StreamOpen() {
		t.Fatal("a stream is open after Stop")
	}
}

func TestLoopReadsAgainAfterStreamEnd(t *testing.T) {
	f, l, _ := start(t, false)
	s := next(t, f)
	f.setRev(40)
	close(s.in)
	if s = next(t, f); s.rev != 41 || l.Gets.Load() != 2 {
		t.Fatalf("after the stream ended: watch at %d, %d gets, want 41 after a second get", s.rev, l.Gets.Load())
	}
}
