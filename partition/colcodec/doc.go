// Package colcodec encodes the columns of a time-series block:
// timestamps, float64, int64, bool and string values, and versions.
// (Layout details: see the end of this comment.)
package colcodec
