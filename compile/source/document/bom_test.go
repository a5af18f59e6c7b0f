package document_test

import (
	"reflect"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
)

// TestByteOrderMark: a UTF-8 byte order mark at the start of a JSON
// document (an object or an array), an NDJSON file or a YAML document is
// skipped, as the CSV reader skips it, and columns are counted after it.
func TestByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	for _, c := range []struct {
		name, file, data string
		want             sourcetest.Result
	}{
		{"JSON object", "b.json", `{"id":{"a":1},"id2":{"a":2}}`, sourcetest.Result{
			Columns: []string{"key", "a"}, Rows: []string{"1:id|1", "1:id2|2"}}},
		{"JSON array", "b.json", "[{\"id\":1},\r\n{\"id\":2}]", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"1:1", "2:2"}}},
		{"gzip JSON", "b.json.gz", `[{"id":1}]`, sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"1:1"}}},
		{"NDJSON", "b.ndjson", "{\"id\":1}\r\n{\"id\":2}\r\n", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"1:1", "2:2"}}},
		{"YAML", "b.yaml", "- id: 1\n- id: 2\n", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"1:1", "2:2"}}},
		{"JSON error on line 1", "b.json", `[{"id":1,}]`, sourcetest.Result{
			Errs: []string{"open: :1:10: invalid character '}' looking for beginning of object key string"}}},
		{"NDJSON error on line 1", "b.ndjson", "{\"id\":1,}\n{\"id\":2}\n", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"2:2"}, Errs: []string{":1:9: invalid character '}' looking for beginning of object key string"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Without the mark first: the same result.
			if got := read(t, write(t, c.file, c.data), source.Options{}); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("without a byte order mark: got  %#v\nwant %#v", got, c.want)
			}
			if got := read(t, write(t, c.file, bom+c.data), source.Options{}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}
