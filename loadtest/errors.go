package loadtest

import "errors"

var (
	// ErrInvalidConfig: a Config setting is out of range. The message names
	// every bad setting as its tsdb loadtest flag.
	ErrInvalidConfig = errors.New("loadtest: invalid config")
	// ErrInvalidSize: a byte size such as "2MB" could not be parsed.
	ErrInvalidSize = errors.New("loadtest: invalid size")
	// ErrNoServers: none of the configured servers answered.
	ErrNoServers = errors.New("loadtest: no server reachable")
	// ErrTable: the table could not be created or read.
	ErrTable = errors.New("loadtest: table")
	// ErrUnsupportedChart: the chart path has an extension other than .svg
	// or .png.
	ErrUnsupportedChart = errors.New("loadtest: unsupported chart format")
)
