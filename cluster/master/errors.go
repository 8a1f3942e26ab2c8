package master

import "github.com/tsdb/tsdb/cluster/wire"

// errUnavailable is what the health report answers when the cluster cannot
// be read (503 unavailable).
var errUnavailable = wire.ErrUnavailable
