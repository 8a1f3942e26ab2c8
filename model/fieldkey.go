package model

// FieldKey is a field name of a measurement and a kind it was written
// with (InfluxQL's SHOW FIELD KEYS). A name written with several kinds has
// one FieldKey per kind.
type FieldKey struct {
	Measurement, Name string
	Kind              Kind
}
