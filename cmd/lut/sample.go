package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/internal/sample"
)

func init() {
	extraCommands = append(extraCommands, newSampleCommand)
}

func newSampleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sample customers|sites|domains|events N",
		Short: "Generate sample data: customers, internal sites, IoC domains, syslog events",
		Long: `Sample writes deterministic sample data for trying lutkit out, for tests
and for benchmarks: the same arguments and seed always give the same bytes.

  customers N   a customers CSV (Index, Customer Id, First Name, Last Name,
                Company, City, Country, Phone 1, Phone 2, Email,
                Subscription Date, Website) with Index 1..N
  sites N       internal sites for an IP table: a CSV of networks (an IPv4
                network in 10.0.0.0/8 and an IPv6 /48 in fd6c:7574::/32 per
                site) with site, city, country, zone, lat and lon
  domains N     an indicator-of-compromise list of N domains (domain,
                threat, source) for a suffix table (--match suffix)
  events N      syslog events (RFC 5424, RFC 3164 or JSON lines) that carry
                cust=<Index> and src=<address>, the address in a site's
                network (--internal percent of them) or public; with
                --domains also dom=<name>, --ioc percent of them at or
                under a listed domain`,
		Example: `  lut sample customers 100000 --out customers.csv
  lut sample sites 64 --out sites.csv
  lut sample domains 100000 --out ioc.csv
  lut sample events 5 --customers 100000 --sites 64
  lut sample events 5 --domains 100000 --ioc 5
  lut sample events 100000 --format rfc3164 --send tcp://127.0.0.1:5514 --rate 20000`,
	}
	cmd.AddCommand(newSampleCustomersCommand(), newSampleSitesCommand(), newSampleDomainsCommand(), newSampleEventsCommand())
	return cmd
}

// countArg parses the N argument.
func countArg(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, &exitError{code: 2, msg: fmt.Sprintf("N must be a count, not %q", s)}
	}
	return n, nil
}

// writeOutput runs write on stdout, or writes out as fsutil.WriteStream
// does: a regular file (or the file a symbolic link names) atomically, a
// device or a named pipe in place.
func writeOutput(cmd *cobra.Command, out string, write func(io.Writer) error) error {
	if out == "" || out == "-" {
		return write(cmd.OutOrStdout())
	}
	return fsutil.WriteStream(out, write)
}

func newSampleCustomersCommand() *cobra.Command {
	var (
		seed uint64
		out  string
	)
	cmd := &cobra.Command{
		Use:   "customers N",
		Short: "Write a customers CSV with Index 1..N",
		Long: `Customers writes a CSV in the shape of the well-known customers sample
data set: Index (1..N, the key), Customer Id (15 hex digits of mixed case,
unique), First Name, Last Name, Company, City, Country, Phone 1, Phone 2,
Email, Subscription Date and Website. Some companies and countries hold a
comma and are quoted. Row i is the same whatever N; another --seed gives
another table.`,
		Example: `  lut sample customers 2000000 --out customers.csv
  lut sample customers 1000 --seed 2 | lut compile --key Index --out c.lut -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := countArg(args[0])
			if err != nil {
				return err
			}
			return writeOutput(cmd, out, func(w io.Writer) error { return sample.WriteCustomers(w, n, seed) })
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the table")
	cmd.Flags().StringVarP(&out, "out", "o", "", "output file (default stdout)")
	return cmd
}

func newSampleSitesCommand() *cobra.Command {
	var (
		seed uint64
		out  string
	)
	cmd := &cobra.Command{
		Use:   "sites N",
		Short: "Write a CSV of N internal sites' networks",
		Long: fmt.Sprintf(`Sites writes a CSV with the columns network, site, city, country, zone,
lat and lon: two rows per site, its IPv4 network (10.0.0.0/8 cut into equal
parts, /12 for up to 16 sites, /24 for up to 65,536) and its IPv6 network
(fd6c:7574:N::/48). N is at most %d. "lut sample events --sites N" draws
internal addresses from the same networks.`, sample.MaxSites),
		Example: `  lut sample sites 64 --out sites.csv
  lut compile --out sites.mmdb --profile city --network network \
      --field city.names.en=city --field country.iso_code=country \
      --field location.latitude=lat --field location.longitude=lon --field site=site sites.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := countArg(args[0])
			if err != nil {
				return err
			}
			if n < 1 || n > sample.MaxSites {
				return &exitError{code: 2, msg: fmt.Sprintf("sites: N must be 1 to %d, not %d", sample.MaxSites, n)}
			}
			return writeOutput(cmd, out, func(w io.Writer) error { return sample.WriteSites(w, n, seed) })
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the table")
	cmd.Flags().StringVarP(&out, "out", "o", "", "output file (default stdout)")
	return cmd
}

func newSampleDomainsCommand() *cobra.Command {
	var (
		seed uint64
		out  string
	)
	cmd := &cobra.Command{
		Use:   "domains N",
		Short: "Write an IoC list of N domains, for a suffix table",
		Long: `Domains writes a CSV with the columns domain, threat and source: N
distinct domains (under .top, .xyz, .click, .zip, .info and .biz) as an
indicator-of-compromise feed lists them. Compiled with --match suffix, a
domain matches itself and every name under it. "lut sample events
--domains N --ioc P" gives events a dom field, P percent of them at or
under one of these domains and the others under .com or .org names that no
listed domain matches.`,
		Example: `  lut sample domains 100000 --out ioc.csv
  lut compile --key domain --match suffix --out ioc.lut ioc.csv
  lut sample events 3 --domains 100000 --ioc 50`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := countArg(args[0])
			if err != nil {
				return err
			}
			if n < 1 {
				return &exitError{code: 2, msg: "domains: N must be at least 1"}
			}
			return writeOutput(cmd, out, func(w io.Writer) error { return sample.WriteDomains(w, n, seed) })
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the table")
	cmd.Flags().StringVarP(&out, "out", "o", "", "output file (default stdout)")
	return cmd
}

func newSampleEventsCommand() *cobra.Command {
	var (
		o     sample.EventOptions
		first int
		out   string
		send  string
		so    sample.SendOptions
	)
	cmd := &cobra.Command{
		Use:   "events N",
		Short: "Write or send N syslog events that reference the customers and sites",
		Long: `Events writes N events, one per line, each carrying cust=<Index> (drawn
uniformly from 1..--customers, or a key in no table for --miss percent of
them) and src=<address> (for --internal percent of them an address of one
of the --sites networks of "lut sample sites", --ipv6 percent of those
IPv6; the others public IPv4 addresses). Event i is stamped 1 ms after
event i-1, from 2026-11-30T05:24:00Z.

  rfc5424  <134>1 2026-11-30T05:24:00.000Z web-03 shop 4242 login - cust=17 src=10.0.3.9 action=login
  rfc3164  <134>Nov 30 05:24:00 web-03 shop[4242]: cust=17 src=10.0.3.9 action=login
  json     {"@timestamp":"...","host":"web-03","app":"shop","cust":"17","src":"10.0.3.9","action":"login"}

With --send the events go to a syslog receiver instead: tcp://HOST:PORT
(one connection, newline framing, or RFC 6587 octet counting with
--octet-count) or udp://HOST:PORT (one datagram per event), at most --rate
events per second; the count sent is printed on stderr once every event
is sent, and an error says how many were sent before it, if any.`,
		Example: `  lut sample events 1000000 --customers 2000000 --out events.rfc5424
  lut sample events 5 --format json --miss 20
  lut sample events 5000 --send tcp://127.0.0.1:5514
  lut sample events 5000 --format rfc3164 --send udp://127.0.0.1:5514 --rate 10000`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := countArg(args[0])
			if err != nil {
				return err
			}
			if err := o.Check(); err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			if send == "" {
				return writeOutput(cmd, out, func(w io.Writer) error { return sample.WriteEvents(w, first, n, o) })
			}
			if out != "" {
				return &exitError{code: 2, msg: "events: give --out or --send, not both"}
			}
			return sendEvents(cmd, send, first, n, o, so)
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the event stream")
	f.StringVar(&o.Format, "format", sample.RFC5424, "rfc5424, rfc3164 or json")
	f.IntVar(&o.Customers, "customers", 100000, "draw cust from 1..K (the rows of \"lut sample customers K\")")
	f.IntVar(&o.Sites, "sites", 64, "draw internal addresses from the networks of \"lut sample sites S\"")
	f.Float64Var(&o.Internal, "internal", 25, "percent of src addresses inside a site's network")
	f.Float64Var(&o.IPv6, "ipv6", 20, "percent of the internal addresses that are IPv6")
	f.Float64Var(&o.Miss, "miss", 0, "percent of events whose cust is in no table")
	f.IntVar(&o.Domains, "domains", 0, "give events dom=<name>, drawn from the list of \"lut sample domains D\" (0: no dom)")
	f.Float64Var(&o.IoC, "ioc", 0, "with --domains: percent of events whose dom is at or under a listed domain")
	f.Uint64Var(&o.DomainSeed, "domain-seed", 1, "with --domains: the --seed of that list")
	f.IntVar(&first, "first", 0, "number of the first event (event i is the same in every run)")
	f.StringVarP(&out, "out", "o", "", "output file (default stdout)")
	f.StringVar(&send, "send", "", "send to tcp://HOST:PORT or udp://HOST:PORT instead of writing")
	f.IntVar(&so.Rate, "rate", 0, "with --send: at most this many events per second (0: no limit)")
	f.BoolVar(&so.OctetCount, "octet-count", false, "with --send tcp://: RFC 6587 octet counting instead of newline framing")
	return cmd
}

func sendEvents(cmd *cobra.Command, target string, first, n int, o sample.EventOptions, so sample.SendOptions) error {
	defer claimSignals()()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(sample.WriteEvents(pw, first, n, o)) }()
	defer pr.Close()
	sent, err := sample.Send(ctx, target, pr, so)
	// The count is printed on success; an error says how many were sent
	// before it, if any.
	if err != nil {
		if sent > 0 {
			return fmt.Errorf("%w (after %d of %d events)", err, sent, n)
		}
		return err
	}
	if sent != int64(n) {
		return fmt.Errorf("sent %d of %d events to %s", sent, n, target)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "sent %d events to %s\n", sent, target)
	return nil
}
