// Command qs GETs one URL in a loop, as the peer harness's client does
// (Go's transport without compression, the answer read whole), and prints
// each second's median and fastest latency, and the count of GETs.
//
// Between GETs it can decode the answer as the harness does (-decode: a
// JSON object's "rows" into raw messages) or pause (-pause), so that the
// server's time for one query can be told from what the client around it
// costs (docs/performance.md, "what the harness's reads measure").
//
// -heap leaves garbage in the heap before the loop as the harness's client
// leaves its write phase's bodies: the client's next collection is then due
// at about twice that, and until it runs every allocation takes memory the
// process never touched, a page fault for each page (docs/performance.md,
// "What the harness's series_select measures on this machine"). Each line
// gives the minor page faults per GET and per decode.
//
//	go run ./bench/qs -url 'http://127.0.0.1:18085/api/v1/tables/bench/query?...' -seconds 3 -decode
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
)

func main() {
	url := flag.String("url", "", "the URL to GET (required)")
	seconds := flag.Int("seconds", 3, "how many seconds to loop; one line each")
	decode := flag.Bool("decode", false, `decode the answer's "rows" between GETs, as the harness does`)
	pause := flag.Duration("pause", 0, "pause between GETs")
	heap := flag.Int("heap", 0, "MB of garbage to leave in the heap before the loop, as the harness's client leaves its write phase's bodies")
	flag.Parse()
	if *url == "" || *seconds < 1 {
		flag.Usage()
		os.Exit(2)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}
	if *heap > 0 {
		leaveGarbage(*heap)
	}
	start := time.Now()
	for s := 1; s <= *seconds; s++ {
		var lat []time.Duration
		var getFaults, decodeFaults int64
		for time.Since(start) < time.Duration(s)*time.Second {
			f0 := minorFaults()
			t := time.Now()
			body, err := get(client, *url)
			if err != nil {
				fmt.Fprintln(os.Stderr, "qs:", err)
				os.Exit(1)
			}
			lat = append(lat, time.Since(t))
			f1 := minorFaults()
			getFaults += f1 - f0
			if *decode {
				var answer struct {
					Rows []json.RawMessage `json:"rows"`
				}
				if err := json.Unmarshal(body, &answer); err != nil {
					fmt.Fprintln(os.Stderr, "qs: decode:", err)
					os.Exit(1)
				}
				decodeFaults += minorFaults() - f1
			}
			time.Sleep(*pause)
		}
		if len(lat) == 0 {
			fmt.Printf("second %d: n=0\n", s) // a GET longer than the second before
			continue
		}
		slices.Sort(lat)
		n := int64(len(lat))
		fmt.Printf("second %d: n=%d p50=%.2fms min=%.2fms faults/get=%d faults/decode=%d\n",
			s, n, ms(lat[n/2]), ms(lat[0]), getFaults/n, decodeFaults/n)
	}
}

// get returns the body of a 200 answer to a GET of url.
func get(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	return body, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// leaveGarbage allocates mb megabytes in pieces of 100 KB (the harness's
// bodies are about 99 KB), keeps them live through a collection, which sets
// the next one at about twice the heap, and drops them.
func leaveGarbage(mb int) {
	pieces := make([][]byte, 0, mb*10)
	for range mb * 10 {
		pieces = append(pieces, make([]byte, 100<<10))
	}
	runtime.GC()
	runtime.KeepAlive(pieces)
}

// minorFaults is the process's count of minor page faults so far.
func minorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}
