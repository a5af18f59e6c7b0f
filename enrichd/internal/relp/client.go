package relp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The client's side of a session: the offers it opens with, the checks of
// the server's answer to them, and the frames it reads afterwards (the
// answers to its commands, or the server's hint that it closes).

// ClientOffers returns the data of a client's "open" command: RELP
// version 0, the software (name, version and address, as librelp writes
// its own), and the one command it sends, syslog.
func ClientOffers(software string) []byte {
	return AppendOffers(nil,
		Offer{"relp_version", "0"},
		Offer{"relp_software", software},
		Offer{"commands", CmdSyslog})
}

// CheckOpen checks the server's answer to "open": status 200,
// a RELP version the client speaks (0), and the syslog command among the
// commands it enables. The error says what the server refused or left
// out.
func CheckOpen(rsp Rsp) error {
	if !rsp.OK() {
		return fmt.Errorf("relp: the server refused the session: %03d %s", rsp.Code, rsp.Text)
	}
	offers, err := ParseOffers(rsp.Extra)
	if err != nil {
		return err
	}
	v, ok := Lookup(offers, "relp_version")
	if !ok {
		return errors.New("relp: the server's answer to open has no relp_version")
	}
	if n, err := strconv.Atoi(v); err != nil || n != 0 {
		return fmt.Errorf("relp: the server speaks RELP version %q, not 0", clip([]byte(v)))
	}
	cmds, _ := Lookup(offers, "commands")
	for c := range strings.SplitSeq(cmds, ",") {
		if c == CmdSyslog {
			return nil
		}
	}
	return fmt.Errorf("relp: the server does not enable the syslog command (commands=%q)", clip([]byte(cmds)))
}

// Answer is a frame a client reads: the answer to its command Txnr, or
// the server's hint that it closes the session (ServerClose).
type Answer struct {
	Txnr        uint32
	Rsp         Rsp
	ServerClose bool
}

// ReadAnswer reads the next frame the server sends a client. Besides the
// errors of Next, a command other than rsp or serverclose, or an rsp whose
// data is not a response, is a *FrameError. The Rsp's Extra aliases the
// Reader's buffer until the next read.
func ReadAnswer(r *Reader) (Answer, error) {
	start := r.offset
	f, err := r.Next()
	if err != nil {
		return Answer{}, err
	}
	switch f.Cmd {
	case CmdRsp:
		rsp, err := ParseRsp(f.Data)
		if err != nil {
			return Answer{}, &FrameError{Offset: start, Reason: err.Error()}
		}
		return Answer{Txnr: f.Txnr, Rsp: rsp}, nil
	case CmdServerClose:
		return Answer{Txnr: f.Txnr, ServerClose: true}, nil
	}
	return Answer{}, &FrameError{Offset: start, Reason: fmt.Sprintf("the server sent the command %q", f.Cmd)}
}

// AddTxnr returns the transaction number n commands after t (n >= 0),
// going on at 1 after MaxTxnr as NextTxnr does.
func AddTxnr(t uint32, n int) uint32 {
	return uint32((int64(t)-1+int64(n)%MaxTxnr)%MaxTxnr + 1)
}

// TxnrDistance returns how many commands after from the transaction
// number to comes (0 to MaxTxnr-1), counting the wrap after MaxTxnr.
func TxnrDistance(from, to uint32) int {
	return int((int64(to) - int64(from) + MaxTxnr) % MaxTxnr)
}
