// Package sample generates the project's sample data, deterministically for
// a seed: a customers table in the shape of the well-known customers sample
// (Index, Customer Id, names, company, city, country, phones, email,
// subscription date, website), internal sites (an IPv4 and an IPv6 network
// per site, with a city, country, zone and coordinates) to build an IP table
// from, and syslog events (RFC 5424, RFC 3164 or JSON lines) that reference
// both through cust=<Index> and src=<address>.
//
// Every row and every event is drawn from its own random stream, derived
// from the seed and its number, so row i is the same whatever the number of
// rows asked for, any row can be recomputed without generating the others
// (NewCustomer, NewSite, EventOptions.Event), and large outputs are
// generated on every core and written in order.
//
// "lut sample" is the command line front end; tests, benchmarks and the
// demo call this package directly.
package sample
