package claimtoken

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/api/contract"
)

var (
	key   = []byte(strings.Repeat("k", 32))
	now   = time.Unix(1_800_000_000, 0)
	grant = Claims{Namespace: "team-a", Claim: "c1", UID: "uid-1", Expiry: now.Add(time.Hour).Unix()}
)

func mint(t *testing.T, c Claims) string {
	t.Helper()
	tok, err := Mint(key, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerifyReturnsWhatWasMinted(t *testing.T) {
	tok := mint(t, grant)
	if !strings.HasPrefix(tok, Prefix) {
		t.Errorf("token %q lacks the prefix %q", tok, Prefix)
	}
	got, err := Verify(key, tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(grant, got); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
}

func TestVerifyRejects(t *testing.T) {
	tok := mint(t, grant)
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
	forged := Claims{Namespace: "team-b", Claim: "c1", UID: "uid-1", Expiry: grant.Expiry}
	otherPayload := strings.SplitN(mint(t, forged), ".", 3)[1] // signed for team-b
	cases := map[string]struct {
		tok  string
		key  []byte
		now  time.Time
		want error
	}{
		"expired":           {tok: tok, key: key, now: time.Unix(grant.Expiry, 0), want: ErrExpired},
		"wrong key":         {tok: tok, key: []byte(strings.Repeat("x", 32)), now: now, want: ErrSignature},
		"payload swapped":   {tok: Prefix + otherPayload + "." + sig, key: key, now: now, want: ErrSignature},
		"signature flipped": {tok: Prefix + payload + "." + flip(sig), key: key, now: now, want: ErrSignature},
		"no signature":      {tok: Prefix + payload, key: key, now: now, want: ErrMalformed},
		"other prefix":      {tok: "kbx2." + payload + "." + sig, key: key, now: now, want: ErrMalformed},
		"empty":             {tok: "", key: key, now: now, want: ErrMalformed},
		"huge":              {tok: Prefix + strings.Repeat("a", 5000) + "." + sig, key: key, now: now, want: ErrMalformed},
		"agent token":       {tok: Prefix + payload + "." + contract.DeriveAgentToken(key, "uid-1"), key: key, now: now, want: ErrSignature},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Verify(tc.key, tc.tok, tc.now); !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyRejectsSignedGarbage(t *testing.T) {
	// A payload signed with the right key but not a grant: the router never mints one, but a bug
	// must not turn it into an empty grant.
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"exp":99999999999}`))
	if _, err := Verify(key, Prefix+payload+"."+sign(key, payload), now); !errors.Is(err, ErrMalformed) {
		t.Errorf("Verify = %v, want %v", err, ErrMalformed)
	}
}

func TestMintRefusesIncompleteGrants(t *testing.T) {
	for name, c := range map[string]Claims{
		"no uid":    {Namespace: "a", Claim: "b", Expiry: 1},
		"no expiry": {Namespace: "a", Claim: "b", UID: "u"},
		"no claim":  {Namespace: "a", UID: "u", Expiry: 1},
	} {
		if _, err := Mint(key, c); err == nil {
			t.Errorf("%s: Mint accepted %+v", name, c)
		}
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

// TestPeekReadsWithoutTheKey checks that a holder learns which claim its token names, and that
// Peek, which cannot check the signature, still refuses malformed and expired tokens.
func TestPeekReadsWithoutTheKey(t *testing.T) {
	tok := mint(t, grant)
	got, err := Peek(tok, now)
	if err != nil || got != grant {
		t.Errorf("Peek = %+v, %v; want %+v", got, err, grant)
	}
	if _, err := Peek(tok, time.Unix(grant.Expiry, 0)); !errors.Is(err, ErrExpired) {
		t.Errorf("Peek at expiry: %v; want ErrExpired", err)
	}
	for _, bad := range []string{"", "kbx1.", Prefix + "!!!.sig", "Bearer " + tok, strings.TrimPrefix(tok, Prefix)} {
		if _, err := Peek(bad, now); !errors.Is(err, ErrMalformed) {
			t.Errorf("Peek(%q): %v; want ErrMalformed", bad, err)
		}
	}
}
