package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Defaults and limits of a TableConfig (DESIGN.md section 1).
const (
	// DefaultReplicationFactor is the replication factor of a table that does
	// not choose one. A caller with fewer live servers lowers it.
	DefaultReplicationFactor = 3
	// MaxReplicationFactor bounds the replication factor.
	MaxReplicationFactor = 7
	// DefaultPartitionSizeTarget is the split threshold of a partition.
	DefaultPartitionSizeTarget int64 = 1 << 30
	// MinPartitionSizeTarget is the smallest split threshold accepted.
	MinPartitionSizeTarget int64 = 64 << 10
	// DefaultSmearMaxDelay is the upper bound of a smeared insert's delay.
	DefaultSmearMaxDelay = Duration(120 * time.Second)
	// DefaultSmearKeyrangeThreshold: partitions narrower than this are smeared.
	DefaultSmearKeyrangeThreshold = Duration(60 * time.Second)
)

// TableConfig is the per-table record stored, as plain JSON, at
// <prefix>tables/<name> in etcd (DESIGN.md section 3), and answered as is
// by the public API (GET /api/v1/tables...). The JSON field names are a
// contract: operators read them with etcdctl.
type TableConfig struct {
	// Name is the table name, [a-z][a-z0-9_]{0,63}.
	Name string `json:"name"`
	// MetadataTxnID is the txnid of the committed METADATA file.
	MetadataTxnID string `json:"metadata_txnid"`
	// MetadataTxnSeq is the txnseq of the committed METADATA file.
	MetadataTxnSeq uint64 `json:"metadata_txnseq"`
	// MetadataChecksum is the checksum of the committed file's encoded bytes.
	MetadataChecksum string `json:"metadata_checksum"`
	// MetadataServers are the ids of the servers that store the table's
	// METADATA files; a commit needs a majority of them.
	MetadataServers []string `json:"metadata_servers"`
	// ReplicationFactor is the number of servers per partition.
	ReplicationFactor int `json:"replication_factor"`
	// PartitionSizeTarget is the partition size, in bytes, above which a
	// partition splits.
	PartitionSizeTarget int64 `json:"partition_size_target"`
	// Retention drops whole partitions older than it; 0 keeps data forever.
	Retention Duration `json:"retention"`
	// Smear holds the insert-smearing settings (DESIGN.md section 7).
	Smear SmearConfig `json:"smear"`
	// CreatedAt is when the table was created (UTC).
	CreatedAt time.Time `json:"created_at"`
}

// SmearConfig holds a table's insert-smearing settings.
type SmearConfig struct {
	// Enabled turns smearing on for the table.
	Enabled bool `json:"enabled"`
	// MaxDelay is the upper bound of the uniform random delay.
	MaxDelay Duration `json:"max_delay"`
	// KeyrangeThreshold: inserts into partitions narrower than this are
	// smeared.
	KeyrangeThreshold Duration `json:"keyrange_threshold"`
}

// Smears reports whether the table's settings smear inserts into a
// partition of [begin, end) (nil: open): smearing is on, the max delay
// positive, and the range narrower than the keyrange threshold, that is
// end−begin < threshold. A partition of exactly the threshold's width is
// not smeared, and an open-ended one is infinitely wide, so never. The
// width is computed in uint64 so that a range spanning most of the int64
// axis does not overflow; an empty or inverted range is not smeared.
func (c SmearConfig) Smears(begin, end *int64) bool {
	if !c.Enabled || c.MaxDelay <= 0 || begin == nil || end == nil || c.KeyrangeThreshold <= 0 || *end <= *begin {
		return false
	}
	return uint64(*end)-uint64(*begin) < uint64(c.KeyrangeThreshold)
}

// DefaultSmear returns the default smear settings: on, 120 s, 60 s.
func DefaultSmear() SmearConfig {
	return SmearConfig{Enabled: true, MaxDelay: DefaultSmearMaxDelay, KeyrangeThreshold: DefaultSmearKeyrangeThreshold}
}

// NewTableConfig returns a config for name with every default filled in. A
// request decoder should unmarshal the user's JSON onto it: fields the user
// leaves out keep their defaults, and an explicit "enabled": false stays off
// (EnsureDefaults cannot tell an absent smear object from a zero one).
func NewTableConfig(name string) TableConfig {
	c := TableConfig{Name: name}
	c.EnsureDefaults()
	return c
}

// EnsureDefaults fills zero fields with defaults: replication factor 3 (the
// caller may lower it), partition size target 1 GiB, and smear {true, 120s,
// 60s} when the whole SmearConfig is zero. Zero durations of an enabled
// SmearConfig are filled individually. Retention 0 means keep forever and is
// left alone. It never touches the metadata_* fields or CreatedAt.
func (c *TableConfig) EnsureDefaults() {
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultReplicationFactor
	}
	if c.PartitionSizeTarget == 0 {
		c.PartitionSizeTarget = DefaultPartitionSizeTarget
	}
	if c.Smear == (SmearConfig{}) {
		c.Smear = DefaultSmear()
	}
	if c.Smear.Enabled && c.Smear.MaxDelay == 0 {
		c.Smear.MaxDelay = DefaultSmearMaxDelay
	}
	if c.Smear.Enabled && c.Smear.KeyrangeThreshold == 0 {
		c.Smear.KeyrangeThreshold = DefaultSmearKeyrangeThreshold
	}
}

// Validate reports every problem of the config at once, each naming its JSON
// field. The error wraps ErrInvalidConfig (and ErrInvalidTable when the
// name is bad). The metadata_* fields are checked only for shape: an empty
// MetadataServers list is valid before the table is created.
func (c *TableConfig) Validate() error {
	var p problems
	if err := ValidateTableName(c.Name); err != nil {
		p.add(fmt.Errorf("name: %w", err))
	}
	if c.ReplicationFactor < 1 || c.ReplicationFactor > MaxReplicationFactor {
		p.addf("replication_factor: must be 1 to %d, got %d", MaxReplicationFactor, c.ReplicationFactor)
	}
	if c.PartitionSizeTarget < MinPartitionSizeTarget {
		p.addf("partition_size_target: must be at least %d bytes, got %d", MinPartitionSizeTarget, c.PartitionSizeTarget)
	}
	p.nonNegative("retention", c.Retention)
	p.nonNegative("smear.max_delay", c.Smear.MaxDelay)
	p.nonNegative("smear.keyrange_threshold", c.Smear.KeyrangeThreshold)
	if c.MetadataTxnID != "" && !ValidTxnID(c.MetadataTxnID) {
		p.addf("metadata_txnid: %q is not 40 lowercase hex characters", c.MetadataTxnID)
	}
	seen := make(map[string]bool, len(c.MetadataServers))
	for _, id := range c.MetadataServers {
		switch {
		case id == "":
			p.addf("metadata_servers: empty server id")
		case seen[id]:
			p.addf("metadata_servers: %q listed twice", id)
		}
		seen[id] = true
	}
	return p.err(ErrInvalidConfig)
}

// problems collects validation failures so they are reported together.
type problems []error

func (p *problems) add(err error) { *p = append(*p, err) }

func (p *problems) addf(format string, args ...any) { p.add(fmt.Errorf(format, args...)) }

func (p *problems) nonNegative(field string, d Duration) {
	if d < 0 {
		p.addf("%s: must not be negative, got %s", field, time.Duration(d))
	}
}

// err returns nil when there is no problem, else one error wrapping sentinel
// and every problem, its message listing them separated by "; ".
func (p problems) err(sentinel error) error {
	if len(p) == 0 {
		return nil
	}
	if len(p) > maxProblems {
		more := fmt.Errorf("and %d more problems", len(p)-maxProblems)
		p = append(p[:maxProblems:maxProblems], more)
	}
	return fmt.Errorf("%w: %w", sentinel, multiError(p))
}

// maxProblems caps the problems one error lists, so a badly broken file of
// many partitions does not produce a megabyte of message.
const maxProblems = 20

// multiError joins errors with "; " (errors.Join uses newlines, which read
// badly in an HTTP error message) and unwraps to all of them.
type multiError []error

func (m multiError) Error() string {
	msgs := make([]string, len(m))
	for i, err := range m {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (m multiError) Unwrap() []error { return m }

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("120s"). On input it also accepts an integer number of
// nanoseconds. TableConfig (in etcd and in the public API's answers) and
// the public API's requests use it.
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string, "0s" for zero.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts a Go duration string or an integer of nanoseconds.
// JSON null leaves the value unchanged. Its error messages reach the answer
// to a bad POST /api/v1/tables.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("invalid duration %s: %w", b, err)
		}
		v, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("invalid duration %s: want a string like \"120s\" or integer nanoseconds", b)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a duration as time.ParseDuration does, also with a
// leading count of weeks or days ("30d", "2w", "1d12h"), as retentions
// are usually written.
func ParseDuration(s string) (time.Duration, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == 'd' || s[i] == 'w') {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		unit := 24 * time.Hour
		if s[i] == 'w' {
			unit *= 7
		}
		if err != nil || n > int64(math.MaxInt64/unit) {
			return 0, fmt.Errorf("invalid duration %q: out of range", s)
		}
		var rest time.Duration
		if s[i+1:] != "" {
			if rest, err = time.ParseDuration(s[i+1:]); err != nil || rest < 0 {
				return 0, fmt.Errorf("invalid duration %q", s)
			}
		}
		v := time.Duration(n) * unit
		if v > math.MaxInt64-rest {
			return 0, fmt.Errorf("invalid duration %q: out of range", s)
		}
		return v + rest, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: %w", s, err)
	}
	return v, nil
}

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// Std returns the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
