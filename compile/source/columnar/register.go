// Package columnar reads Parquet files and Arrow IPC files as row sources
// for the compiler, and writes Parquet for "lut export" (arrow-go).
// Importing it registers the "parquet" and "arrow" formats and the
// "parquet" writer with package source.
package columnar

import "github.com/lutkit/lutkit/compile/source"

func init() {
	source.RegisterFormat("parquet", []string{".parquet"}, func(path string, _ source.Options) (source.Reader, error) { return openParquet(path) })
	source.RegisterFormat("arrow", []string{".arrow", ".feather", ".ipc"}, func(path string, _ source.Options) (source.Reader, error) { return openArrow(path) })
	source.RegisterWriter("parquet", newParquetWriter)
}
