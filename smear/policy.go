package smear

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// PolicyInput is everything Decide looks at. It is filled by the front end
// for one insert batch aimed at one partition.
type PolicyInput struct {
	// Enabled is the server-wide switch (the --smear flag).
	Enabled bool
	// Table is the target table's smear settings (TableConfig.smear).
	Table metadata.SmearConfig
	// OptedOut reports that the request asked not to be smeared: the
	// X-TSDB-Smear header, read with api.ParseSmearHeader.
	OptedOut bool
	// Begin is the target partition's inclusive start in ns; nil is open.
	Begin *int64
	// End is the target partition's exclusive end in ns; nil is open.
	End *int64
}

// Decide reports whether an insert should be smeared (DESIGN.md section 7):
// smearing is on for the server and for the table, the request did not opt
// out, the table's max delay is positive, and the target partition is
// narrower than the table's threshold, that is end−begin < threshold. A
// partition of exactly the threshold's width is not smeared, and an
// open-ended partition (Begin or End nil) is infinitely wide, so never.
//
// A zero (or negative) max delay turns smearing off: every due time would
// be "now", so the queue would add a synced write and a hop and spread
// nothing. A zero threshold smears nothing either, as no partition is
// narrower than zero.
func Decide(in PolicyInput) bool {
	return in.Enabled && !in.OptedOut && in.Table.Smears(in.Begin, in.End)
}

// DueTime draws a due time uniformly from [now, now+maxDelay], both ends
// included. rnd returns a uniform integer in [0, n) for n > 0, like
// math/rand/v2.Int64N (nil uses that); results outside the range are
// clamped. A zero or negative maxDelay returns now without calling rnd.
//
// One due time is drawn per insert batch (per table): the rows of one
// request travel together, so the queue writes one entry per request and
// the forwarder sends them as one call. The load still spreads, because
// different requests draw independent times.
func DueTime(now time.Time, maxDelay time.Duration, rnd func(int64) int64) time.Time {
	if maxDelay <= 0 {
		return now
	}
	if rnd == nil {
		rnd = rand.Int64N
	}
	n := int64(maxDelay)
	if n < math.MaxInt64 {
		n++ // include maxDelay itself
	}
	d := min(max(rnd(n), 0), int64(maxDelay))
	return now.Add(time.Duration(d))
}
