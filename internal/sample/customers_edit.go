package sample

import (
	"bufio"
	"io"
)

// WriteCustomersEdited writes the customers table of seed with rows
// 1..n as WriteCustomers does, except the rows edit reports as edited:
// those are written with the fields it returns, or left out when it
// returns nil fields. It makes a later version of the same table, for
// tests of updates.
func WriteCustomersEdited(w io.Writer, n int, seed uint64, edit func(index int) (fields []string, edited bool)) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	line := appendCSVHeader(nil, CustomerHeader)
	var scratch []byte
	for i := 1; i <= n; i++ {
		f, edited := edit(i)
		switch {
		case !edited:
			line, scratch = AppendCustomerCSV(line, seed, i, scratch[:0])
		case f != nil:
			for j, v := range f {
				if j > 0 {
					line = append(line, ',')
				}
				line = appendCSVField(line, []byte(v))
			}
			line = append(line, '\n')
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
		line = line[:0]
	}
	return bw.Flush()
}
