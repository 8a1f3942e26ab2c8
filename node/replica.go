package node

import "github.com/tsdb/tsdb/replica"

// DefaultMaxClockOffset is Config.MaxClockOffset's default.
//
// Deprecated: alias until issue 15's node split lands.
const DefaultMaxClockOffset = replica.DefaultMaxClockOffset

// DefaultMaxSubQueryBytes is Config.MaxSubQueryBytes's default.
//
// Deprecated: alias until issue 15's node split lands.
const DefaultMaxSubQueryBytes = replica.DefaultMaxSubQueryBytes
