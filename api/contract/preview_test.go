package contract

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestPreviewIDIsStableShortAndDistinct(t *testing.T) {
	a, b := PreviewID("0b6c7a8e-1111-4a4a-9a9a-000000000001"), PreviewID("0b6c7a8e-1111-4a4a-9a9a-000000000002")
	if a != PreviewID("0b6c7a8e-1111-4a4a-9a9a-000000000001") {
		t.Errorf("ID is not stable: %q then %q", a, PreviewID("0b6c7a8e-1111-4a4a-9a9a-000000000001"))
	}
	if a == b {
		t.Errorf("two UIDs share the id %q", a)
	}
	if !validPreviewID(a) || !validPreviewID(b) {
		t.Errorf("ids %q %q are not %d lowercase base32 characters", a, b, PreviewIDLength)
	}
	// Preview links outlive a release: a fixed UID keeps its id.
	if got, want := PreviewID("uid-1"), "jtc5xzg6i4kc"; got != want {
		t.Errorf("PreviewID(uid-1) = %q; want %q (did the derivation change?)", got, want)
	}
}

func TestParsePreviewHostRoundTrip(t *testing.T) {
	id := PreviewID(types.UID("uid-1"))
	cases := map[string]struct {
		host, domain string
		port         int
	}{
		"plain":            {host: PreviewHost(3000, id, "preview.example.com"), domain: "preview.example.com", port: 3000},
		"listener port":    {host: PreviewHost(8080, id, "preview.example.com") + ":443", domain: "preview.example.com", port: 8080},
		"upper case":       {host: strings.ToUpper(PreviewHost(1, id, "p.example")), domain: "P.Example", port: 1},
		"trailing dot":     {host: PreviewHost(65535, id, "p.example") + ".", domain: "p.example.", port: 65535},
		"localhost domain": {host: PreviewHost(80, id, "localhost") + ":18080", domain: "localhost", port: 80},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			port, gotID, ok := ParsePreviewHost(tc.host, tc.domain)
			if !ok || port != tc.port || gotID != id {
				t.Errorf("ParsePreviewHost(%q, %q) = %d, %q, %v; want %d, %q, true", tc.host, tc.domain, port, gotID, ok, tc.port, id)
			}
			if l := PreviewLabel(port, gotID); len(l) > MaxPreviewLabelLength {
				t.Errorf("label %q is longer than %d", l, MaxPreviewLabelLength)
			}
		})
	}
}

func TestParsePreviewHostRejectsGarbage(t *testing.T) {
	id := PreviewID(types.UID("uid-1"))
	for name, host := range map[string]string{
		"other domain":       "3000-" + id + ".example.org",
		"domain itself":      "preview.example.com",
		"nested label":       "a.3000-" + id + ".preview.example.com",
		"suffix not label":   "3000-" + id + "preview.example.com",
		"port zero":          "0-" + id + ".preview.example.com",
		"port too big":       "65536-" + id + ".preview.example.com",
		"leading zero":       "080-" + id + ".preview.example.com",
		"signed port":        "+80-" + id + ".preview.example.com",
		"no port":            "-" + id + ".preview.example.com",
		"no id":              "3000-.preview.example.com",
		"short id":           "3000-" + id[:11] + ".preview.example.com",
		"long id":            "3000-" + id + "a.preview.example.com",
		"id not base32":      "3000-" + id[:11] + "1.preview.example.com",
		"no dash":            "3000" + id + ".preview.example.com",
		"empty":              "",
		"ip":                 "127.0.0.1:8080",
		"two dashes":         "3000-" + id + "-x.preview.example.com",
		"empty domain label": "." + "preview.example.com",
	} {
		t.Run(name, func(t *testing.T) {
			if port, gotID, ok := ParsePreviewHost(host, "preview.example.com"); ok {
				t.Errorf("ParsePreviewHost(%q) = %d, %q, true; want false", host, port, gotID)
			}
		})
	}
	if _, _, ok := ParsePreviewHost("3000-"+id+".x", ""); ok {
		t.Error("ParseHost with an empty domain accepted a host; previews are off without a domain")
	}
}

func FuzzParsePreviewHost(f *testing.F) {
	f.Add("3000-"+PreviewID("u"), "preview.example.com")
	f.Add("8080-abcdefghijkl.Preview.Example.com.:443", "preview.example.com")
	f.Add("[::1]:80", "localhost")
	f.Fuzz(func(t *testing.T, host, domain string) {
		port, id, ok := ParsePreviewHost(host, domain)
		if !ok {
			return
		}
		if port < 1 || port > 65535 || !validPreviewID(id) {
			t.Fatalf("ParsePreviewHost(%q, %q) accepted port %d id %q", host, domain, port, id)
		}
		if len(PreviewLabel(port, id)) > MaxPreviewLabelLength {
			t.Fatalf("label %q too long", PreviewLabel(port, id))
		}
		again, againID, ok := ParsePreviewHost(PreviewHost(port, id, domain), domain)
		if !ok || again != port || againID != id {
			t.Fatalf("round trip of %q under %q: %d %q %v", host, domain, again, againID, ok)
		}
	})
}
