//go:build !linux

package process

import (
	"errors"
	"os"
)

var errNoPTY = errors.New("kubox-agent opens terminals on Linux only")

func openPTY(PTYSize) (master, tty *os.File, err error) { return nil, nil, errNoPTY }

func setPTYSize(*os.File, PTYSize) error { return errNoPTY }
