// Package relp reads and writes the frames of RELP, the Reliable Event
// Logging Protocol of librelp (rsyslog's omrelp and imrelp), version 0.
//
// A frame is
//
//	TXNR SP COMMAND SP DATALEN [SP DATA] LF
//
// TXNR is a transaction number of 1 to 9 digits (0 only in the
// server's unsolicited "serverclose" hint), COMMAND 1 to 32 ASCII letters,
// DATALEN the number of octets of DATA (1 to 9 digits), and DATA is
// absent when DATALEN is 0. A client numbers its commands 1, 2, 3, ...
// (after 999,999,999 it goes on at 1, as librelp does); the server answers
// each with an "rsp" frame of the same number whose data starts with a
// three-digit status ("200 OK", "500 reason") and may go on, after a LF,
// with more (the offers, in the answer to "open").
//
// The commands are "open" (its data the client's offers, one
// name=value per line), "syslog" (one message), "close", and from the
// server "rsp" and "serverclose". The package parses and builds frames and
// offers only; sessions, windows and acknowledgements are the input's and
// the output's.
package relp
