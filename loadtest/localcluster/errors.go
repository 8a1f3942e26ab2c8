package localcluster

import "errors"

var (
	// ErrConfig: a Config field is out of range.
	ErrConfig = errors.New("localcluster: invalid config")
	// ErrStart: a server exited or did not become ready while starting.
	ErrStart = errors.New("localcluster: start")
	// ErrStop: a server had to be killed, or its directory could not be
	// removed.
	ErrStop = errors.New("localcluster: stop")
)
