package sample

import (
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"strconv"
)

// SiteHeader is the header row of the sites table: one row per network,
// two networks (IPv4, IPv6) per site.
var SiteHeader = []string{"network", "site", "city", "country", "zone", "lat", "lon"}

// MaxSites is the largest number of sites: each gets at least an IPv4 /24
// of 10.0.0.0/8 and an IPv6 /48 of fd6c:7574::/32.
const MaxSites = 1 << 16

// Site is one internal site.
type Site struct {
	Name     string // city code and number, e.g. "par-7"
	IPv4     netip.Prefix
	IPv6     netip.Prefix
	City     string
	Country  string // ISO 3166-1 alpha-2
	Zone     string
	Lat, Lon float64
}

type city struct {
	code, name, country string
	lat, lon            float64
}

var cities = []city{
	{"ams", "Amsterdam", "NL", 52.3676, 4.9041}, {"ash", "Ashburn", "US", 39.0438, -77.4874},
	{"bcn", "Barcelona", "ES", 41.3874, 2.1686}, {"bom", "Mumbai", "IN", 19.0760, 72.8777},
	{"cdg", "Paris", "FR", 48.8566, 2.3522}, {"chi", "Chicago", "US", 41.8781, -87.6298},
	{"cpt", "Cape Town", "ZA", -33.9249, 18.4241}, {"dfw", "Dallas", "US", 32.7767, -96.7970},
	{"dub", "Dublin", "IE", 53.3498, -6.2603}, {"dxb", "Dubai", "AE", 25.2048, 55.2708},
	{"fra", "Frankfurt", "DE", 50.1109, 8.6821}, {"gru", "São Paulo", "BR", -23.5505, -46.6333},
	{"hel", "Helsinki", "FI", 60.1699, 24.9384}, {"hkg", "Hong Kong", "HK", 22.3193, 114.1694},
	{"icn", "Seoul", "KR", 37.5665, 126.9780}, {"lhr", "London", "GB", 51.5072, -0.1276},
	{"lis", "Lisbon", "PT", 38.7223, -9.1393}, {"mad", "Madrid", "ES", 40.4168, -3.7038},
	{"mel", "Melbourne", "AU", -37.8136, 144.9631}, {"mex", "Mexico City", "MX", 19.4326, -99.1332},
	{"mil", "Milan", "IT", 45.4642, 9.1900}, {"nbo", "Nairobi", "KE", -1.2921, 36.8219},
	{"nyc", "New York", "US", 40.7128, -74.0060}, {"osl", "Oslo", "NO", 59.9139, 10.7522},
	{"scl", "Santiago", "CL", -33.4489, -70.6693}, {"sea", "Seattle", "US", 47.6062, -122.3321},
	{"sin", "Singapore", "SG", 1.3521, 103.8198}, {"sjc", "San Jose", "US", 37.3382, -121.8863},
	{"sto", "Stockholm", "SE", 59.3293, 18.0686}, {"syd", "Sydney", "AU", -33.8688, 151.2093},
	{"tyo", "Tokyo", "JP", 35.6762, 139.6503}, {"waw", "Warsaw", "PL", 52.2297, 21.0122},
	{"yul", "Montréal", "CA", 45.5019, -73.5674}, {"yyz", "Toronto", "CA", 43.6532, -79.3832},
	{"zrh", "Zürich", "CH", 47.3769, 8.5417},
}

var zones = []string{"datacenter", "office", "dmz", "lab", "store", "warehouse"}

// sitePrefixBits is the IPv4 prefix length of each of n sites' networks:
// 10.0.0.0/8 cut into at least 16 equal parts, enough for n.
func sitePrefixBits(n int) int {
	k := max(4, bits.Len(uint(max(n, 1)-1)))
	return 8 + k
}

func checkSites(n int) error {
	if n < 1 || n > MaxSites {
		return fmt.Errorf("sample: %d sites: want 1 to %d", n, MaxSites)
	}
	return nil
}

// NewSite returns site i (0-based) of a table of n sites of seed.
func NewSite(seed uint64, n, i int) Site {
	r := newStream(seed, kindSite, i)
	c := cities[r.intn(len(cities))]
	plen := sitePrefixBits(n)
	v4 := netip.AddrFrom4([4]byte{10, 0, 0, 0})
	a := v4.As4()
	off := uint32(i) << (32 - plen)
	a[1], a[2], a[3] = byte(off>>16), byte(off>>8), byte(off)
	v6 := [16]byte{0xfd, 0x6c, 0x75, 0x74, byte(i >> 8), byte(i)}
	jitter := func() float64 { return float64(r.intn(1001)-500) / 10000 }
	return Site{
		Name:    c.code + "-" + strconv.Itoa(i+1),
		IPv4:    netip.PrefixFrom(netip.AddrFrom4(a), plen),
		IPv6:    netip.PrefixFrom(netip.AddrFrom16(v6), 48),
		City:    c.name,
		Country: c.country,
		Zone:    pick(&r, zones),
		Lat:     round4(c.lat + jitter()),
		Lon:     round4(c.lon + jitter()),
	}
}

func round4(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 4, 64), 64)
	return v
}

// SiteOf returns the number of the site (of a table of n sites) whose
// network holds addr.
func SiteOf(n int, addr netip.Addr) (int, bool) {
	addr = addr.Unmap()
	if addr.Is4() {
		a := addr.As4()
		if a[0] != 10 {
			return 0, false
		}
		i := int((uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])) >> (32 - sitePrefixBits(n)))
		return i, i < n
	}
	a := addr.As16()
	if a[0] != 0xfd || a[1] != 0x6c || a[2] != 0x75 || a[3] != 0x74 {
		return 0, false
	}
	i := int(a[4])<<8 | int(a[5])
	return i, i < n
}

// WriteSites writes the sites table of seed with n sites as CSV: a header,
// then each site's IPv4 and IPv6 network rows.
func WriteSites(w io.Writer, n int, seed uint64) error {
	if err := checkSites(n); err != nil {
		return err
	}
	b := appendCSVHeader(nil, SiteHeader)
	for i := range n {
		s := NewSite(seed, n, i)
		for _, p := range []netip.Prefix{s.IPv4, s.IPv6} {
			b = p.AppendTo(b)
			for _, v := range []string{s.Name, s.City, s.Country, s.Zone} {
				b = appendCSVField(append(b, ','), []byte(v))
			}
			b = strconv.AppendFloat(append(b, ','), s.Lat, 'f', 4, 64)
			b = strconv.AppendFloat(append(b, ','), s.Lon, 'f', 4, 64)
			b = append(b, '\n')
		}
		if len(b) > 1<<16 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}
