//go:build !linux

package threadprio

import "runtime"

func lower(int) error {
	runtime.LockOSThread()
	return ErrUnsupported
}
