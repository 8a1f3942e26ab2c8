package colcodec

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestConcurrent runs the pooled encoders and decoders from several
// goroutines at once (run with -race): pooled scratch buffers must never be
// shared, and every goroutine must get its own values back.
func TestConcurrent(t *testing.T) {
	r := newRand(t)
	floats := floatShapes[0].gen(r, 500)
	strs := stringShapes[0].gen(r, 500)
	long := stringShapes[3].gen(r, 500) // zstd
	vers := versionShapes[2].gen(r, 500)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				n := rr.IntN(500)
				fc, _ := EncodeFloats(nil, floats[:n])
				fd, err := DecodeFloats(nil, fc)
				if err != nil || !slices.EqualFunc(fd, floats[:n], eqFloat) {
					errs <- "floats"
					return
				}
				src := strs
				if g%2 == 1 {
					src = long
				}
				sc, _ := EncodeStrings(nil, src[:n])
				sd, err := DecodeStrings(nil, sc)
				if err != nil || !slices.Equal(sd, src[:n]) {
					errs <- "strings"
					return
				}
				vc, _ := EncodeVersions(nil, vers[:n])
				vd, err := DecodeVersions(nil, vc)
				if err != nil || !slices.Equal(vd, vers[:n]) {
					errs <- "versions"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s: a concurrent round trip failed", e)
	}
}
