package colcodec

import "unsafe"

// int64View returns f's memory as []int64 (same length): DecodeFloats
// decodes mantissas in place before converting each to a float64.
func int64View(f []float64) []int64 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&f[0])), len(f))
}
