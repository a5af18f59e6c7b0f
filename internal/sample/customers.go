package sample

import (
	"io"
	"strconv"
	"time"
)

// CustomerHeader is the header row of the customers table.
var CustomerHeader = []string{"Index", "Customer Id", "First Name", "Last Name", "Company", "City",
	"Country", "Phone 1", "Phone 2", "Email", "Subscription Date", "Website"}

// Customer is one row of the customers table.
type Customer struct {
	Index                              int
	ID                                 string // 15 hex digits of mixed case, unique in the table
	FirstName, LastName, Company, City string
	Country, Phone1, Phone2, Email     string
	SubscriptionDate, Website          string
}

// Fields returns the row's values in CustomerHeader's order.
func (c Customer) Fields() []string {
	return []string{strconv.Itoa(c.Index), c.ID, c.FirstName, c.LastName, c.Company, c.City,
		c.Country, c.Phone1, c.Phone2, c.Email, c.SubscriptionDate, c.Website}
}

var (
	firstNames = []string{"Aaliyah", "Adrian", "Aiko", "Alejandro", "Amara", "Anders", "Anika", "Bruno",
		"Camille", "Chidi", "Clara", "Dario", "Deborah", "Dmitri", "Elif", "Emeka", "Esther", "Farid",
		"Freya", "Gabriel", "Greta", "Hamza", "Hana", "Ibrahim", "Ines", "Jasper", "Joanna", "Kai",
		"Keisha", "Lars", "Leila", "Lorenzo", "Maeve", "Marcus", "Mariana", "Nadia", "Nikolai", "Noor",
		"Oscar", "Paloma", "Quentin", "Rafael", "Rosa", "Samir", "Selin", "Tariq", "Thea", "Tomas",
		"Uma", "Valentina", "Wendell", "Ximena", "Yara", "Yusuf", "Zara", "Zoltan"}
	lastNames = []string{"Abbott", "Achterberg", "Adeyemi", "Alvarado", "Bachmann", "Barros", "Bergstrom",
		"Castellano", "Chowdhury", "Costa", "Dalton", "Delacroix", "Eriksen", "Fairbanks", "Ferreira",
		"Gallagher", "Grünewald", "Haddad", "Halvorsen", "Ishikawa", "Jablonski", "Kaplan", "Kowalczyk",
		"Lindgren", "Lombardi", "Mbeki", "McAllister", "Moreau", "Nakamura", "Novotny", "Obi", "Okonkwo",
		"Pereira", "Quintero", "Rahman", "Reinholt", "Salazar", "Schmidt", "Sørensen", "Takahashi",
		"Thornton", "Underwood", "Valdez", "Vasquez", "Whitaker", "Wojcik", "Yilmaz", "Zamora", "Zhou"}
	companySuffixes = []string{"Group", "Inc", "Ltd", "LLC", "PLC", "and Sons", "Partners", "Holdings"}
	cityPrefixes    = []string{"", "", "", "North ", "South ", "East ", "West ", "New ", "Port ", "Lake ", "Fort ", "Mount "}
	citySuffixes    = []string{"", "ton", "ville", "burgh", "mouth", "haven", "field", "side", "view", "port", "berg", "chester"}
	countries       = []string{"Argentina", "Australia", "Austria", "Bahamas", "Belgium", "Bolivia",
		"Bosnia and Herzegovina", "Brazil", "Canada", "Chile", "Colombia", "Congo, The Democratic Republic of the",
		"Croatia", "Denmark", "Egypt", "Estonia", "Finland", "France", "Germany", "Ghana", "Greece",
		"Holy See (Vatican City State)", "Iceland", "India", "Indonesia", "Iran, Islamic Republic of",
		"Ireland", "Italy", "Japan", "Kenya", "Korea, Republic of", "Lao People's Democratic Republic",
		"Mexico", "Morocco", "Netherlands", "New Zealand", "Nigeria", "Norway", "Peru", "Poland",
		"Portugal", "Saint Kitts and Nevis", "Slovakia (Slovak Republic)", "South Africa", "Spain",
		"Sweden", "Switzerland", "Tanzania, United Republic of", "Turkey", "Uruguay", "Viet Nam",
		"Virgin Islands, U.S."}
	tlds = []string{"com", "net", "org", "info", "biz", "io", "co"}
)

// dates holds every subscription date the table uses: 2020-01-01 to
// 2022-12-31.
var dates = func() []string {
	var d []string
	for t := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC); t.Year() < 2023; t = t.AddDate(0, 0, 1) {
		d = append(d, t.Format(time.DateOnly))
	}
	return d
}()

// customerID returns the 60-bit number behind customer index's Customer
// Id: a permutation of the indexes, so that two rows never share one.
func customerID(seed uint64, index int) uint64 {
	const mask = 1<<60 - 1
	x := (uint64(index) + seed*0x2545f4914f6cdd1d) & mask
	x = x * 0x5851f42d4c957f2d & mask // odd multipliers permute the integers mod 2^60
	x ^= x >> 29
	x = x * 0x14057b7ef767814f & mask
	x ^= x >> 31
	return x
}

func appendHexID(dst []byte, r *stream, v uint64) []byte {
	const lower, upper = "0123456789abcdef", "0123456789ABCDEF"
	cases := r.next()
	for k := 14; k >= 0; k-- {
		d := v >> (4 * k) & 15
		if cases>>k&1 == 1 {
			dst = append(dst, upper[d])
		} else {
			dst = append(dst, lower[d])
		}
	}
	return dst
}

func appendDigits(dst []byte, r *stream, n int) []byte {
	v := r.next()
	for range n {
		dst = append(dst, byte('0'+v%10))
		v /= 10
	}
	return dst
}

func appendPhone(dst []byte, r *stream) []byte {
	switch r.intn(5) {
	case 0:
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '-')
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '-')
		dst = appendDigits(dst, r, 4)
	case 1:
		dst = append(dst, '(')
		dst = appendDigits(dst, r, 3)
		dst = append(dst, ')')
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '-')
		dst = appendDigits(dst, r, 4)
	case 2:
		dst = append(dst, "+1-"...)
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '-')
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '-')
		dst = appendDigits(dst, r, 4)
	case 3:
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '.')
		dst = appendDigits(dst, r, 3)
		dst = append(dst, '.')
		dst = appendDigits(dst, r, 4)
	default:
		dst = appendDigits(dst, r, 10)
	}
	if r.intn(3) == 0 {
		dst = append(dst, 'x')
		dst = appendDigits(dst, r, 1+r.intn(4))
	}
	return dst
}

func appendCompany(dst []byte, r *stream) []byte {
	a, b := pick(r, lastNames), pick(r, lastNames)
	switch r.intn(4) {
	case 0:
		return append(append(append(dst, a...), ' '), pick(r, companySuffixes)...)
	case 1:
		return append(append(append(dst, a...), '-'), b...)
	case 2:
		dst = append(append(append(dst, a...), ", "...), b...)
		return append(append(dst, " and "...), pick(r, lastNames)...)
	default:
		return append(append(append(dst, a...), " and "...), b...)
	}
}

func appendCity(dst []byte, r *stream) []byte {
	dst = append(dst, pick(r, cityPrefixes)...)
	if r.intn(2) == 0 {
		dst = append(dst, pick(r, firstNames)...)
	} else {
		dst = append(dst, pick(r, lastNames)...)
	}
	return append(dst, pick(r, citySuffixes)...)
}

// appendLower appends s in lower case, for host names and mailboxes: the
// few non-ASCII letters of the word lists are spelt in ASCII, anything
// else but letters and digits is left out.
func appendLower(dst []byte, s string) []byte {
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			dst = append(dst, byte(c+'a'-'A'))
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			dst = append(dst, byte(c))
		case c == 'ü':
			dst = append(dst, "ue"...)
		case c == 'ø':
			dst = append(dst, 'o')
		}
	}
	return dst
}

// customerFields calls put with each field of row index in turn.
func customerFields(seed uint64, index int, scratch []byte, put func(field int, v []byte)) []byte {
	r := newStream(seed, kindCustomer, index)
	b := strconv.AppendInt(scratch[:0], int64(index), 10)
	put(0, b)
	b = appendHexID(b[:0], &r, customerID(seed, index))
	put(1, b)
	first, last := pick(&r, firstNames), pick(&r, lastNames)
	put(2, append(b[:0], first...))
	put(3, append(b[:0], last...))
	b = appendCompany(b[:0], &r)
	put(4, b)
	b = appendCity(b[:0], &r)
	put(5, b)
	put(6, append(b[:0], pick(&r, countries)...))
	b = appendPhone(b[:0], &r)
	put(7, b)
	b = appendPhone(b[:0], &r)
	put(8, b)
	b = appendLower(b[:0], first)
	switch r.intn(3) {
	case 0:
		b = append(b, '.')
		b = appendLower(b, last)
	case 1:
		b = appendLower(b, last[:1])
		b = appendDigits(b, &r, 2)
	default:
		b = appendDigits(b, &r, 3)
	}
	b = append(b, '@')
	b = appendLower(b, pick(&r, lastNames))
	b = append(b, '.')
	b = append(b, pick(&r, tlds)...)
	put(9, b)
	put(10, append(b[:0], dates[r.intn(len(dates))]...))
	b = append(b[:0], "http"...)
	if r.intn(4) != 0 {
		b = append(b, 's')
	}
	b = append(b, "://"...)
	if r.intn(2) == 0 {
		b = append(b, "www."...)
	}
	b = appendLower(b, pick(&r, lastNames))
	if r.intn(3) == 0 {
		b = append(b, '-')
		b = appendLower(b, pick(&r, lastNames))
	}
	b = append(b, '.')
	b = append(b, pick(&r, tlds)...)
	b = append(b, '/')
	put(11, b)
	return b
}

// NewCustomer returns row index (1-based) of the customers table of seed.
func NewCustomer(seed uint64, index int) Customer {
	var f [12]string
	customerFields(seed, index, nil, func(i int, v []byte) { f[i] = string(v) })
	return Customer{Index: index, ID: f[1], FirstName: f[2], LastName: f[3], Company: f[4], City: f[5],
		Country: f[6], Phone1: f[7], Phone2: f[8], Email: f[9], SubscriptionDate: f[10], Website: f[11]}
}

// AppendCustomerCSV appends row index of seed's table as a CSV line
// (RFC 4180: fields holding a comma or a quote are quoted).
func AppendCustomerCSV(dst []byte, seed uint64, index int, scratch []byte) ([]byte, []byte) {
	scratch = customerFields(seed, index, scratch, func(i int, v []byte) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCSVField(dst, v)
	})
	return append(dst, '\n'), scratch
}

func appendCSVField(dst, v []byte) []byte {
	quote := false
	for _, c := range v {
		if c == ',' || c == '"' || c == '\n' || c == '\r' {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, c := range v {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

func appendCSVHeader(dst []byte, header []string) []byte {
	for i, h := range header {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCSVField(dst, []byte(h))
	}
	return append(dst, '\n')
}

// WriteCustomers writes the customers table of seed with rows 1..n, header
// first, as CSV.
func WriteCustomers(w io.Writer, n int, seed uint64) error {
	if _, err := w.Write(appendCSVHeader(nil, CustomerHeader)); err != nil {
		return err
	}
	return writeOrdered(w, 1, n, func(dst []byte, i int) []byte {
		var scratch [128]byte
		dst, _ = AppendCustomerCSV(dst, seed, i, scratch[:0])
		return dst
	})
}
