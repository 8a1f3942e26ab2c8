package rpc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// clockLog records the stamps a PeerClock received.
type clockLog struct {
	mu   sync.Mutex
	seen map[string]time.Duration // peer → received - sentAt
}

func (l *clockLog) observe(peer string, sentAt int64, received time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[peer] = time.Duration(received.UnixNano() - sentAt)
}

func (l *clockLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = map[string]time.Duration{}
}

func (l *clockLog) get(peer string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.seen[peer]
	return d, ok
}

// TestClockHeaderBothWays: a call carries the caller's clock to the callee
// and the answer — an error answer too — carries the callee's back, so each
// side sees the other's offset; stamps that are absent, malformed or the
// server's own are ignored.
func TestClockHeaderBothWays(t *testing.T) {
	const ahead = 3 * time.Second // the callee's clock runs ahead
	calleeLog := &clockLog{seen: map[string]time.Duration{}}
	callee := &PeerClock{ServerID: "callee", Now: func() time.Time { return time.Now().Add(ahead) }, Observe: calleeLog.observe}
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		callee.Receive(ctx.Request.Header.Peek(ClockHeader))
		if string(ctx.Path()) == "/fail" {
			WriteError(ctx, fasthttp.StatusConflict, "conflict", "no")
		} else {
			WriteResponse(ctx, fasthttp.StatusOK, map[string]int{"ok": 1})
		}
		ctx.Response.Header.Set(ClockHeader, callee.Stamp())
	})
	callerLog := &clockLog{seen: map[string]time.Duration{}}
	c := NewClient(Config{Clock: &PeerClock{ServerID: "caller", Now: time.Now, Observe: callerLog.observe}})
	defer c.Close()

	for _, path := range []string{"/ok", "/fail"} {
		callerLog.reset()
		calleeLog.reset()
		_ = c.Call(context.Background(), addr, path, map[string]int{"x": 1}, nil)
		// The callee sees the caller 3 s behind (plus the delay); the caller
		// sees the callee 3 s ahead (minus the delay).
		if d, ok := calleeLog.get("caller"); !ok || d < ahead || d > ahead+time.Minute { // the delay only adds
			t.Errorf("%s: the callee saw the caller's clock %v off (seen %v), want about %v", path, d, ok, ahead)
		}
		if d, ok := callerLog.get("callee"); !ok || d < -ahead-time.Second || d > 0 {
			t.Errorf("%s: the caller saw the callee's clock %v off (seen %v), want about %v", path, d, ok, -ahead)
		}
	}

	for _, bad := range []string{"", "123", "x callee", "-5 callee", "123 "} {
		if _, _, ok := ParseClockStamp(bad); ok {
			t.Errorf("ParseClockStamp(%q) accepted", bad)
		}
	}
	if p, at, ok := ParseClockStamp("1700000000000000000 s 1"); !ok || p != "s 1" || at != 1700000000000000000 {
		t.Errorf("ParseClockStamp: %q %d %v", p, at, ok)
	}
	own := &clockLog{seen: map[string]time.Duration{}}
	self := &PeerClock{ServerID: "s1", Now: time.Now, Observe: own.observe}
	self.Receive([]byte(self.Stamp()))
	if _, ok := own.get("s1"); ok {
		t.Error("a server's own stamp was observed")
	}
}
