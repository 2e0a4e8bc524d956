package shlex

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The expectations are what Python 3's shlex.split gives for the same input.
func TestSplit(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []string
		wantErr error
	}{
		"empty":                            {in: "", want: []string{}},
		"only whitespace":                  {in: " \t\r\n ", want: []string{}},
		"simple":                           {in: "echo hello", want: []string{"echo", "hello"}},
		"leading and trailing blanks":      {in: "  lead  trail  ", want: []string{"lead", "trail"}},
		"every separator":                  {in: "a\tb\nc\rd", want: []string{"a", "b", "c", "d"}},
		"double quotes":                    {in: `python3 -c "print(1)"`, want: []string{"python3", "-c", "print(1)"}},
		"single quotes keep spaces":        {in: "echo 'a b' c", want: []string{"echo", "a b", "c"}},
		"quotes join adjacent text":        {in: `a"b"c'd'`, want: []string{"abcd"}},
		"empty double quotes":              {in: `""`, want: []string{""}},
		"two empty single quotes":          {in: "'' ''", want: []string{"", ""}},
		"empty quotes next to text":        {in: "a''", want: []string{"a"}},
		"escaped space":                    {in: `a\ b`, want: []string{"a b"}},
		"escaped letter":                   {in: `\x`, want: []string{"x"}},
		"backslash newline":                {in: "\\\n", want: []string{"\n"}},
		"escaped quote in double":          {in: `"a\"b"`, want: []string{`a"b`}},
		"escaped backslash in double":      {in: `"a\\b"`, want: []string{`a\b`}},
		"other escape in double":           {in: `"a\xb"`, want: []string{`a\xb`}},
		"backslash in single":              {in: `'a\'`, want: []string{`a\`}},
		"single quote in a word":           {in: `'it'\''s'`, want: []string{"it's"}},
		"no comments":                      {in: "x #y", want: []string{"x", "#y"}},
		"no expansion":                     {in: "$HOME *.py ~ `id` $(id) a|b;c&&d>e", want: []string{"$HOME", "*.py", "~", "`id`", "$(id)", "a|b;c&&d>e"}},
		"non-ASCII":                        {in: "é 'ü x'", want: []string{"é", "ü x"}},
		"unicode space is not a separator": {in: "a\u00a0b", want: []string{"a\u00a0b"}},
		"NUL is a character":               {in: "a\x00b", want: []string{"a\x00b"}},
		"unclosed double":                  {in: `echo "unterminated`, wantErr: ErrNoClosingQuotation},
		"unclosed single":                  {in: "'unterminated", wantErr: ErrNoClosingQuotation},
		"trailing backslash":               {in: `trailing\`, wantErr: ErrNoEscapedCharacter},
		"backslash at end in double":       {in: `"esc at end\`, wantErr: ErrNoEscapedCharacter},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Split(tc.in)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Split(%q) error %v, want %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Split(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestErrorMessagesArePythons(t *testing.T) {
	if ErrNoClosingQuotation.Error() != "No closing quotation" || ErrNoEscapedCharacter.Error() != "No escaped character" {
		t.Errorf("messages %q, %q differ from Python's", ErrNoClosingQuotation, ErrNoEscapedCharacter)
	}
}

// The expectations are what Python 3's shlex.quote gives.
func TestQuote(t *testing.T) {
	cases := map[string]string{
		"":              "''",
		"plain":         "plain",
		"a/b.c-d_e@f%g": "a/b.c-d_e@f%g",
		"+=:,":          "+=:,",
		"a b":           "'a b'",
		"it's":          `'it'"'"'s'`,
		"$HOME":         "'$HOME'",
		"é":             "'é'",
		"\n":            "'\n'",
	}
	for in, want := range cases {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJoin(t *testing.T) {
	words := []string{"printf", "%s\n", "it's", "", "a b"}
	if got, want := Join(words), `printf '%s`+"\n"+`' 'it'"'"'s' '' 'a b'`; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "echo hello", `a"b"c`, "'' ''", `"a\"b\\c\d"`, `'it'\''s'`, "\\\n", `"x`, `y\`, "é\x00\t"} {
		f.Add(s, "word", "two words")
	}
	f.Add("ls -la", "", "'\"\\")
	f.Fuzz(func(t *testing.T, s, w1, w2 string) {
		// Never panics; an error is one of the two.
		words, err := Split(s)
		if err != nil && !errors.Is(err, ErrNoClosingQuotation) && !errors.Is(err, ErrNoEscapedCharacter) {
			t.Fatalf("Split(%q): unexpected error %v", s, err)
		}
		// Splitting what Join made of some words gives them back.
		for _, want := range [][]string{{s}, {w1, w2}, {s, w1, w2}} {
			got, err := Split(Join(want))
			if err != nil {
				t.Fatalf("Split(Join(%q)): %v", want, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Split(Join(%q)) (-want +got):\n%s", want, diff)
			}
		}
		// Re-joining a split gives the same words.
		if err == nil {
			again, err := Split(Join(words))
			if err != nil || !cmp.Equal(words, again) {
				t.Fatalf("Split(Join(Split(%q))) = %q, %v; want %q", s, again, err, words)
			}
		}
	})
}
