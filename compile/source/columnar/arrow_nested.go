package columnar

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// nestedValues returns the number of values that values [from, to) of
// arr hold, counting each element of a list, each field of a struct, and
// the value a union, a run-end encoded or a dictionary array holds, and
// stops past limit. The text form arrow-go gives a nested value grows
// with them, and a list of nulls (or of run-end encoded values) holds any
// number of them in a few bytes of the file.
func nestedValues(arr arrow.Array, from, to, limit int64) int64 {
	n := max(to-from, 0)
	switch a := arr.(type) {
	case array.ListLike:
		for i := from; i < to && n <= limit; i++ {
			s, e := a.ValueOffsets(int(i))
			n += nestedValues(a.ListValues(), s, e, limit-n)
		}
	case *array.Struct:
		for f := 0; f < a.NumField() && n <= limit; f++ {
			n += nestedValues(a.Field(f), from, to, limit-n)
		}
	case array.Union:
		for i := from; i < to && n <= limit; i++ {
			j := i
			if d, ok := a.(*array.DenseUnion); ok {
				j = int64(d.ValueOffset(int(i)))
			}
			n += nestedValues(a.Field(a.ChildID(int(i))), j, j+1, limit-n)
		}
	case *array.RunEndEncoded:
		for i := from; i < to && n <= limit; i++ {
			p := int64(a.GetPhysicalIndex(int(i)))
			n += nestedValues(a.Values(), p, p+1, limit-n)
		}
	case *array.Dictionary:
		for i := from; i < to && n <= limit; i++ {
			v := int64(a.GetValueIndex(int(i)))
			n += nestedValues(a.Dictionary(), v, v+1, limit-n)
		}
	case array.ExtensionArray:
		return nestedValues(a.Storage(), from, to, limit)
	}
	return n
}
