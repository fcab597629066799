package hostfirewall

import (
	"errors"
	"reflect"
	"testing"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

// kernel stands in for netlink: it records what each send held and acknowledges every message, or answers
// every send with errno.
type kernel struct {
	sends [][]netlink.HeaderType
	errno unix.Errno
}

func (k *kernel) dial() nftables.ConnOption {
	return nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		if req == nil { // a receive after the queued answers ran out: the ack of the next message
			return []netlink.Message{{Header: netlink.Header{Type: netlink.Error}, Data: make([]byte, 4)}}, nil
		}
		var types []netlink.HeaderType
		for _, m := range req {
			types = append(types, m.Header.Type)
		}
		k.sends = append(k.sends, types)
		if k.errno != 0 {
			return nltest.Error(int(k.errno), req)
		}
		return []netlink.Message{{Header: netlink.Header{Type: netlink.Error}, Data: make([]byte, 4)}}, nil
	})
}

func nft(msg int) netlink.HeaderType { return netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msg) }

var (
	batchBegin = netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN)
	batchEnd   = netlink.HeaderType(unix.NFNL_MSG_BATCH_END)
	newTable   = nft(unix.NFT_MSG_NEWTABLE)
	delTable   = nft(unix.NFT_MSG_DELTABLE)
	newChain   = nft(unix.NFT_MSG_NEWCHAIN)
	newRule    = nft(unix.NFT_MSG_NEWRULE)
)

func TestInstallIsOneBatchThatReplacesTheTable(t *testing.T) {
	k := &kernel{}
	if err := install(Config{ProxyPort: 3128}, k.dial()); err != nil {
		t.Fatal(err)
	}
	want := [][]netlink.HeaderType{{batchBegin, newTable, delTable, newTable,
		newChain, newRule, newRule, newRule, // input
		newChain, newRule, newRule, // forward: dsi-, dsn-
		batchEnd}}
	if !reflect.DeepEqual(k.sends, want) {
		t.Errorf("sent %v, want %v", k.sends, want)
	}
}

func TestRemoveIsOneBatchThatToleratesAnAbsentTable(t *testing.T) {
	k := &kernel{}
	if err := remove(Config{ProxyPort: 3128}, k.dial()); err != nil {
		t.Fatal(err)
	}
	want := [][]netlink.HeaderType{{batchBegin, newTable, delTable, batchEnd}}
	if !reflect.DeepEqual(k.sends, want) {
		t.Errorf("sent %v, want %v", k.sends, want)
	}
}

func TestPermissionDeniedIsErrNoPrivilege(t *testing.T) {
	for _, op := range []struct {
		name string
		run  func(Config, ...nftables.ConnOption) error
	}{{"install", install}, {"remove", remove}} {
		k := &kernel{errno: unix.EPERM}
		err := op.run(Config{ProxyPort: 3128}, k.dial())
		if !errors.Is(err, ErrNoPrivilege) || !errors.Is(err, unix.EPERM) {
			t.Errorf("%s: got %v, want ErrNoPrivilege wrapping EPERM", op.name, err)
		}
	}
}

func TestOtherKernelErrorsAreNotErrNoPrivilege(t *testing.T) {
	k := &kernel{errno: unix.EINVAL}
	err := install(Config{ProxyPort: 3128}, k.dial())
	if err == nil || errors.Is(err, ErrNoPrivilege) {
		t.Errorf("got %v, want an error that is not ErrNoPrivilege", err)
	}
}
