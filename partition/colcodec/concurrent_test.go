package colcodec

import (
	"math/rand/v2"
	"runtime"
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

// TestZstdStartsNoGoroutine checks the claim of zstdCodec: EncodeAll and
// DecodeAll run on the caller's goroutine, so the package owns none. (Run
// alone, -run TestZstd, it covers the construction of the codec too.)
func TestZstdStartsNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	col, err := EncodeStrings(nil, stringShapes[3].gen(newRand(t), 500))
	if err != nil || Codec(col[0]) != CodecStringZstd {
		t.Fatalf("want a %v column, have %v (%v)", CodecStringZstd, Codec(col[0]), err)
	}
	if _, err := DecodeStrings(nil, col); err != nil {
		t.Fatal(err)
	}
	// Only more is wrong: a goroutine of an earlier test may end meanwhile
	// (seen under -race: 3 before, 2 after).
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before zstd, %d after", before, after)
	}
}
