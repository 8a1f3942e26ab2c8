// Package block encodes the rows of one series in a closed time window as
// one immutable, checksummed column block (issue 17), and decodes it: all
// of it, one field's columns, or only the per-field summaries. It is pure:
// bytes in, bytes out, no pebble, no keys, no I/O. The columns are
// partition/colcodec's; this package lays them out and adds presence,
// versions, summaries and a checksum. The store seals closed storage
// buckets into such blocks (partition/seal.go).
//
// # API
//
//	Encode(dst, rows) / (*Encoder).Encode   rows → block appended to dst
//	Open(b) / (*Reader).Reset(b)            check the checksum, read the header,
//	                                        the field names, kinds and summaries
//	(*Reader).ResetStored(b)                the same without the checksum, for a
//	                                        block of the server's own store
//	(*Reader).Len, MinTime, MaxTime         rows, first and last time
//	(*Reader).Fields, NumFields, Field      names (sorted) and kinds (0: mixed)
//	(*Reader).Predicted(i)                  field i is stored predicted from
//	                                        others (decoded from theirs too)
//	(*Reader).Summary(field, series)        model.AggState of the field's values
//	                                        (ok false for tombstones only)
//	(*Reader).Times(dst)                    the timestamps
//	(*Reader).Column(field, *Column)        one field: rows that have it, values,
//	                                        versions; no other field is decoded
//	(*Reader).ColumnValues(field, *Column)  the same without the versions
//	(*Reader).ColumnAggregate(field, *Column) the same, a float column's
//	                                        values in Floats only, or as
//	                                        decimal Mantissas and a Scale
//	(*Reader).DecimalHead(field, rows, *Column) the first rows mantissas of
//	                                        a decimal float column and the
//	                                        exact sum of all of them, from
//	                                        its decimal summary (counts and
//	                                        sums only: model.Query.SumsOnly)
//	(*Reader).Rows(dst, series)             every row back (exact round trip);
//	                                        reuses dst's field array, see below
//
// Encode takes the rows of one series (every Series equal) by strictly
// ascending time, at most MaxRows, each with at least one field, at most
// MaxFields names in the block and MaxValues values (fields of all rows),
// fields sorted by name without duplicates (model.Row.Normalize),
// kinds float, int, bool (I 0 or 1), string or deleted (a tombstone,
// kept with its version for last-writer-wins merges). Anything else is
// ErrInvalid. A field may have values of several kinds in one block.
//
// # Limits
//
// Blocks travel between servers, so a block with a valid checksum may
// still be hostile; the limits keep what decoding it allocates in
// proportion to a legitimate block's. MaxRows is 2^17 (131,072): twice a
// 68.7 s window (2^36 ns) at one row per millisecond, a column's values
// at most 8 MiB. MaxFields is model.MaxFields (1,024), checked by Open.
// MaxValues is 2^20 values (fields of all rows, tombstones included):
// Rows checks it from the presences before it allocates its field array
// (72 bytes a value, at most 72 MiB), since tombstones of every row cost
// the block almost no bytes. Strings are bounded by colcodec.
//
// Decoding never panics: bytes that are not a block Encode wrote are
// ErrCorrupt. Open verifies the checksum over the whole block (every
// single-bit flip and truncation is caught there), then the layout: the
// header, the field count, names, flags and summaries, and the timestamps
// column's own count against the header's. The column decoders check
// counts, order and consistency again (ColumnValues checks the layout of
// the versions it skips and that nothing trails), and Rows that every
// row has a field, so a block with a valid checksum but a layout Encode
// never writes is an error too, and what decodes without error is
// well-formed (TestCorruptionBehindChecksum, FuzzOpen).
// Floats round-trip bit for bit (NaN payloads, ±Inf, -0), strings and
// versions exactly.
//
// With reused buffers (an Encoder, a Reader with Reset, a Column, the
// rows Rows returned) the paths do not allocate per point: Rows allocates
// only the string columns' backing strings (colcodec.DecodeStrings), and
// Open one string per field name unless the Reader's last block had the
// same names. A Reader and an Encoder are for one goroutine at a time. A
// Reader refers to the block's bytes until the next Reset; the values it
// returns do not (strings are copied out of the block). An Encoder (and
// Encode's pooled ones) keeps no reference to the caller's strings once
// Encode returns.
//
// Memory the results pin: the string values Rows and Column return for
// a field are substrings of one string per string column (the column's
// decoded bytes), so keeping any one of them keeps that whole column
// alive; copy it (strings.Clone) to keep it alone.
//
// Rows' reuse rule: the rows of one Rows call share one array of fields.
// When the dst passed to Rows holds the rows this Reader's previous Rows
// call returned (its first row's Fields start that array), the array is
// reused: the earlier rows' fields are overwritten, even if the Reader
// was Reset to another block in between. To keep rows across calls,
// pass a dst that does not hold them (nil, or another slice) or copy
// their fields first. A Column is overwritten by the next call given it.
//
// Preliminary figures on one harness series (BenchmarkEncode, ...:
// -benchtime=200ms, 2 shared cores; a point is a row of 3 float fields):
// Encode 215 ns per point (of which the colcodec encoders take about 85
// and the summaries' AggState.Add about 55), Rows 59, Column of one field
// 13.5, ColumnValues 7.9 (both including Reset), Open and one Summary
// 0.5 µs per block (the CRC), Summary on an open Reader 12 ns; no
// allocation with reused buffers.
//
// # Summaries
//
// Per field, the model.AggState that AggState.Add builds over the field's
// non-tombstone values in time order (for a column of finite floats,
// model.FloatRun's, equal up to float rounding in Sum, Mean and M2, when
// neither overflows): Count (values other than
// tombstones), N (numeric: float, int, bool as 0 or 1; strings count in
// Count only), Sum, Min, Max, first and last (time, value) and Welford's
// Mean and M2 (stddev). Summary sets FirstSeries and LastSeries to the
// series the caller names (a block holds one series and does not store
// it). A block of fewer than SummaryMinRows rows keeps none (its fields'
// counts only): Summary returns ok false and HasSummaries false, and a
// reader decodes its columns. A field of tombstones only has Count 0 and
// no summary: Summary
// returns ok false, as the row aggregator creates no field state (and
// no bucket) for rows whose only values are tombstones. The summaries
// describe the block alone: a reader that merges head
// rows over the block cannot use them for the rows it merges.
//
// # Layout
//
// Integers are little-endian; uvarint is encoding/binary's; "len | X"
// is a uvarint byte count followed by X; "column" is a colcodec column
// (its own header, codec id and count; see colcodec's doc).
//
//	block    = header | times | [rowvers] | field × nfields | crc(4)
//	header   = 0x01 (FormatVersion) | flags(1) | n:uvarint | min(8) | max(8) | nfields:uvarint
//	times    = len | timestamps column of n values, strictly ascending, from min to max
//	rowvers  = len | versions column of n values (present iff flags bit 0)
//	field    = namelen:uvarint | name | len | section
//	section  = fflags(1) | kind(1) | count:uvarint | num:uvarint | [summary(72)]
//	           | presence | [kinds] | values | versions
//	crc      = CRC-32C (Castagnoli) of every byte before it
//
// The header: flags bit 0 says the block-level version column is present,
// bit 1 that the fields keep no summaries (the encoder sets it on a block
// of fewer than SummaryMinRows rows; the decoder accepts it on a block of
// any size, so that the threshold may change), the other bits are 0; n (1..MaxRows) is the row count; min and max are
// the first and last row's times (int64); nfields is 1..MaxFields; the
// timestamps column's count is n. Fields are sorted by name (bytes),
// names 1..256 bytes (model.MaxFieldNameLen), each present in at least
// one row, every row has at least one field, and the fields' present
// values number at most MaxValues.
//
// A field's section:
//
//   - fflags: bits 0-1 the presence form (0 every row, 1 bitmap, 2 runs);
//     bit 2 mixed kinds (a kinds column follows and kind is 0); bit 3 the
//     field has its own version column; bit 4 the summary is in the
//     decimal form (below; only with kind float, num > 0 and the header's
//     bit 1 clear); bit 5 the field is predicted ("Predicted fields"
//     below; only with presence form 0, kind float and num = n); bits 6-7
//     are 0.
//   - kind: the model.Kind of every value (1 float, 2 int, 3 bool,
//     4 string, 5 deleted), 0 when mixed.
//   - count and num: the summary's Count and N (num ≤ count ≤ m). When
//     num > 0 and the header's bit 1 is clear, the summary follows: 9 × 8 bytes, Sum, Min, Max (float64
//     bits), FirstTime (int64), First, LastTime, Last, Mean, M2; or, with
//     bit 4, its decimal form, for a field whose values are all floats
//     stored as one decimal column (colcodec's CodecFloatDecimal) of
//     exponent e: e(1) | sum | min | max | first | last (each a zigzag
//     uvarint of a mantissa: the value is m / 10^e; sum is the exact sum
//     of the column's mantissas, read back as float64(sum) / 10^e) |
//     FirstTime − min:uvarint | max − LastTime:uvarint (the header's min
//     and max) | M2 (8 bytes, float64 bits); Mean is read back as
//     Sum / N. The encoder writes it whenever Min, Max, First and Last
//     are values of the column bit for bit and the mantissas' sum fits an
//     int64: about 22 bytes instead of 72 on the harness's fields.
//   - presence: which of the n rows have the field (m of them, m ≥ 1):
//     form 0 nothing (m = n); form 1 a bitmap of ceil(n/8) bytes, bit i%8
//     of byte i/8 set when row i has it, padding bits 0; form 2 a run list
//     k:uvarint | k × length:uvarint, the lengths alternating absent,
//     present, absent, ... from row 0, the first possibly 0, the others
//     at least 1, summing to n. The encoder writes form 0 when every row
//     has the field, else the smaller of the run list and the bitmap
//     (the bitmap on a tie).
//   - kinds (mixed only): len | ints column of m kind codes (1..5).
//   - values: one "len | column" per kind among float, int, bool and
//     string, in that order, that has at least one value in the field:
//     a floats, ints, bools (I ≠ 0) or strings column of that kind's
//     values in row order. Tombstones have no values.
//   - versions, with fflags bit 3: len | versions column of the m values'
//     versions. Without it (the block has rowvers): e:uvarint exceptions
//     (≤ m), then when e > 0: len | ints column of the e positions
//     (0 ≤ p < m, strictly ascending, positions among the field's values)
//     | len | versions column of their e versions. A value's version is
//     its exception's, else its row's in rowvers.
//
// # Predicted fields
//
// A field with fflags bit 5 stores its values as residuals from other
// fields of the block: its section's presence is form 0 (nothing), and
// where the values would start come
//
//	t:uvarint (1..8) | t × (j << 1 | neg):uvarint | len | residual column
//
// then its versions as any field's. Each term names field j (an index
// into the block's fields, not the field itself, each at most once) with
// coefficient −1 when neg is 1, else +1; the residual column is a
// decimal floats column (colcodec's CodecFloatDecimal) of n values. Value
// i is float64(m) / 10^e with m = r[i] + Σ c_j·m_j[i], where r are the
// residual column's mantissas, e its exponent and m_j the mantissas of
// term j, which must be a decimal column of the same exponent. A term is
// a field of presence form 0, kind float, num = n and no bit 5: a
// predicted field is never a term, so every predicted field decodes from
// plain columns. The summary is the field's own (of its values m / 10^e),
// in either form.
//
// The encoder (predict.go) considers, in a block of at least 32 rows, the
// first 16 fields that every row has as floats stored in the decimal
// form. It measures each by the bits of its zigzagged deltas (over the
// first 256 rows), tries the costliest first, and adds terms one at a
// time, the field and sign that lower that measure most, while a term
// takes off at least an eighth of a bit a row; it keeps the rewrite only
// when it takes at most seven eighths of the field's own column. On the
// harness's shape usage_idle (100 − user − system, each printed with 2
// decimals) is predicted from the other two: residuals of −1, 0 or +1
// hundredths.
//
// The encoder's version choice: each row's block version is the one most
// of its fields carry (Boyer-Moore majority vote: a row of one write has
// its write's version). Each field takes the smaller of its exceptions
// and its own column; when some field has exceptions, the block column is
// kept only when that total is smaller than one own column per field; a
// block of one field always uses its own column.
//
// On the harness's shape (TestHarnessSize: 2,000 points of 3 float
// fields, one write per row, millisecond clock) a block takes 2.93 bytes
// per point at one server and 3.25 at three with usage_idle predicted;
// without prediction 3.97 and 4.28: the floats 3.57, the versions 0.31
// (0.61), the timestamps 0.01, names, summaries and headers 0.08.
package block
