package presplit

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of a Config (DESIGN.md section 8).
const (
	// DefaultHorizon is how far past now the time axis is kept pre-split.
	DefaultHorizon = 10 * time.Minute
	// DefaultMinWidth is the narrowest partition a plan makes.
	DefaultMinWidth = time.Second
	// DefaultMaxWidth is the widest partition a plan makes, and the width
	// of an idle table (rate zero).
	DefaultMaxWidth = 24 * time.Hour
	// DefaultUnknownWidth is the width for a table whose rate is unknown
	// (no closed partition yet, e.g. a new table).
	DefaultUnknownWidth = time.Hour
	// DefaultMinAhead is the number of bounded partitions that must lie
	// entirely in the future.
	DefaultMinAhead = 3
	// DefaultMaxPoints caps the split points of one plan, which bounds the
	// growth of one METADATA file (a SPLIT_BEGIN lists every child).
	DefaultMaxPoints = 1000
)

// Config holds the planner's settings. The zero value of every field means
// "use the default"; EnsureDefaults fills them and Validate checks the
// result. Width, Plan and PlanTable fill defaults themselves.
type Config struct {
	// Horizon is the pre-split lead: after a plan is applied, the bounded
	// partitions reach at least now+Horizon, so the open tail starts at or
	// beyond it. Default 10m.
	Horizon time.Duration
	// Refill is the hysteresis of the planner: it acts only when the tail
	// begins before now+Horizon (or too few partitions lie ahead), and then
	// splits up to now+Horizon+Refill, so it commits about one SPLIT_BEGIN
	// per Refill of time rather than one per planner tick. Default
	// Horizon/2 (set 1ns for practically none).
	Refill time.Duration
	// MinWidth is the narrowest partition width a plan makes. Default 1s.
	MinWidth time.Duration
	// MaxWidth is the widest partition width a plan makes; it is also the
	// width for an idle table (rate zero). Default 24h.
	MaxWidth time.Duration
	// UnknownWidth is the width for a table whose rate is unknown: no
	// partition with both bounds has closed yet, e.g. a new table. It is
	// clamped to [MinWidth, MaxWidth]. Default 1h: the first bounded
	// partition then closes, and gives a rate, within about two hours, and
	// a table that turns out idle is left with a handful of hourly
	// partitions; MaxWidth would instead leave a busy new table in day-wide
	// partitions, cut only by size splits, for three to four days.
	UnknownWidth time.Duration
	// MinAhead is the least number of bounded partitions (both ends set)
	// that must begin at or after now once a plan is applied, whatever the
	// horizon: with 1-day partitions and a 10-minute horizon, three days
	// are pre-split. The open tail does not count. Default 3.
	MinAhead int
	// MaxPoints caps the split points of one plan. A capped plan covers
	// less than the horizon; the next run continues from its last point.
	// Default 1000.
	MaxPoints int
	// RateWindow is the span of closed time the rate is estimated over
	// (EstimateRateOver). Default RateWindow (1h); tests shorten it so a
	// change of rate shows within a run.
	RateWindow time.Duration
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	var c Config
	c.EnsureDefaults()
	return c
}

// EnsureDefaults fills the zero fields with their defaults. Refill defaults
// to half of the (possibly defaulted) Horizon. Negative values are left for
// Validate to report.
func (c *Config) EnsureDefaults() {
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Refill == 0 {
		c.Refill = c.Horizon / 2
	}
	if c.MinWidth == 0 {
		c.MinWidth = DefaultMinWidth
	}
	if c.MaxWidth == 0 {
		c.MaxWidth = DefaultMaxWidth
	}
	if c.UnknownWidth == 0 {
		c.UnknownWidth = DefaultUnknownWidth
	}
	if c.MinAhead == 0 {
		c.MinAhead = DefaultMinAhead
	}
	if c.MaxPoints == 0 {
		c.MaxPoints = DefaultMaxPoints
	}
	if c.RateWindow == 0 {
		c.RateWindow = RateWindow
	}
}

// Validate reports every problem of c at once, each naming its field, in an
// error wrapping ErrInvalidConfig. Call it after EnsureDefaults: a zero
// field is reported as not positive.
func (c Config) Validate() error {
	var probs []string
	positive := func(field string, d time.Duration) {
		if d <= 0 {
			probs = append(probs, fmt.Sprintf("%s: must be positive, got %s", field, d))
		}
	}
	positive("Horizon", c.Horizon)
	positive("Refill", c.Refill)
	positive("MinWidth", c.MinWidth)
	positive("MaxWidth", c.MaxWidth)
	positive("UnknownWidth", c.UnknownWidth)
	positive("RateWindow", c.RateWindow)
	if c.MinWidth > 0 && c.MaxWidth > 0 && c.MinWidth > c.MaxWidth {
		probs = append(probs, fmt.Sprintf("MinWidth: %s is above MaxWidth %s", c.MinWidth, c.MaxWidth))
	}
	if c.MinAhead < 1 {
		probs = append(probs, fmt.Sprintf("MinAhead: must be at least 1, got %d", c.MinAhead))
	}
	if c.MaxPoints < 1 {
		probs = append(probs, fmt.Sprintf("MaxPoints: must be at least 1, got %d", c.MaxPoints))
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(probs, "; "))
}

// withDefaults returns a copy of c with its defaults filled in.
func (c Config) withDefaults() Config {
	c.EnsureDefaults()
	return c
}
