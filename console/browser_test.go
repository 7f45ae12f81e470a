package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/e2e/harness"
)

// Browser tests drive the real pages in headless Chromium (Debian package
// chromium). Screenshots of each page go to $FLYFS_SCREENSHOTS (default: the
// test's temporary directory).

type tab struct {
	t      *testing.T
	ctx    context.Context
	base   string
	shots  string
	alerts atomic.Int32 // JavaScript dialogs (alert/confirm/prompt) opened
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func newTab(t *testing.T, base string) *tab {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1366, 900), chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	tb := &tab{t: t, ctx: ctx, base: base, shots: os.Getenv("FLYFS_SCREENSHOTS")}
	if tb.shots == "" {
		tb.shots = t.TempDir()
	}
	if err := os.MkdirAll(tb.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			tb.alerts.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return tb
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.doWithin(30*time.Second, what, steps...)
}

// doWithin is do with its own bound.
func (b *tab) doWithin(d time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// click waits for the element sel names, then clicks it from script in the
// same evaluation: a page refresh may replace the element between a CSS
// query and a native click (chromedp: "Could not find node with given id").
func (b *tab) click(what, sel string) {
	b.t.Helper()
	q := strconv.Quote(sel)
	b.waitJS(what+" (its element)", `!!document.querySelector(`+q+`)`, 15*time.Second)
	b.do(what, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+q+`).click()`))
}

// waitJS polls a JavaScript expression until it is true.
func (b *tab) waitJS(what, expr string, d time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById('main').innerText.slice(0, 1500)`))
		b.shot("failed-" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r
			}
			return '-'
		}, strings.ToLower(what)))
		b.t.Fatalf("waiting for %s: %v\npage text: %s", what, err, body)
	}
}

func (b *tab) eval(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *tab) shot(name string) {
	b.t.Helper()
	chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
}

func (b *tab) signIn(k KeyInfo) {
	b.t.Helper()
	// A tab's first page starts Chromium's renderer: on a machine loaded
	// by the rest of the suite that alone took 30 s.
	b.doWithin(90*time.Second, "open the sign-in page",
		chromedp.Navigate(b.base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#signin-access")))
	b.waitJS("nothing of the signed-in chrome before sign-in", signedOutChrome, 5*time.Second)
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#signin-access"), k.AccessKey),
		chromedp.SendKeys(chromedp.CSS("#signin-secret"), k.Secret),
		chromedp.Click(chromedp.CSS("#signin-submit")),
		chromedp.WaitVisible(chromedp.CSS("#top")))
}

// signedOutChrome is true while the page shows the sign-in form and none of
// the signed-in header (nav, sign-out, the key name).
const signedOutChrome = `(() => {
	const top = document.getElementById('top'), who = document.getElementById('who');
	return getComputedStyle(top).display === 'none' && top.getBoundingClientRect().height === 0 &&
		who.textContent === '' && getComputedStyle(document.getElementById('signin')).display !== 'none';
})()`

func (b *tab) goTo(hash string) {
	b.t.Helper()
	b.do("go to "+hash, chromedp.Evaluate[chromedp.Void]("location.hash = "+jsString(hash)))
}

func jsString(s string) string {
	j, _ := json.Marshal(s)
	return string(j)
}

// rowJS is an expression finding the listing row of an entry by its exact name.
func rowJS(name string) string {
	return `[...document.querySelectorAll('#listing tbody tr')].find(tr => tr.dataset.name === ` + jsString(name) + `)`
}

func TestBrowserNamespaceAndPages(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	b := newTab(t, r.srv.URL)
	ctx := context.Background()

	// Sign-in refused for a key without admin rights, then accepted.
	b.doWithin(90*time.Second, "non-admin sign-in", // the tab's first page (see signIn)
		chromedp.Navigate(b.base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#signin-access")),
		chromedp.SendKeys(chromedp.CSS("#signin-access"), r.user.AccessKey),
		chromedp.SendKeys(chromedp.CSS("#signin-secret"), r.user.Secret),
		chromedp.Click(chromedp.CSS("#signin-submit")))
	b.waitJS("the refusal of a non-admin key", `document.getElementById('signin-error').textContent.includes('admin rights')`, 10*time.Second)
	b.shot("signin-refused")
	b.signIn(r.admin)

	// Overview with every service up.
	b.waitJS("a healthy overview with all services alive", `(() => {
		const rows = [...document.querySelectorAll('#services tbody tr')];
		const h = document.querySelector('#health .badge');
		return h && h.textContent === 'healthy' && rows.length >= 3 &&
			rows.some(r => r.cells[0].textContent === 'metad') && rows.some(r => r.cells[0].textContent === 'storaged') &&
			rows.every(r => !r.textContent.includes('failed') && !r.textContent.includes('gone'));
	})()`, 20*time.Second)
	b.waitJS("the charts to draw", `[...document.querySelectorAll('.chart:not([data-latency]) .now')].every(e => e.textContent !== '–' && e.textContent !== 'no data yet')`, 10*time.Second)
	b.do("an hour of history", chromedp.Click(chromedp.CSS(`#range button[data-range="1h"]`)))
	b.waitJS("the hour range chosen and kept in the URL", `location.hash === '#/overview?range=1h' && !document.querySelector('#range button[data-range="1h"]').classList.contains('secondary') &&
		[...document.querySelectorAll('.chart:not([data-latency]) .now')].every(e => e.textContent !== '–')`, 10*time.Second)
	// Capacity: used of total with its percentage and bar; each disk's file
	// system size and use.
	b.waitJS("capacity with used, total and %", `(() => {
		const c = document.getElementById('capacity');
		const d = document.querySelector('#disks tbody tr');
		return c && /% used/.test(c.textContent) && / used of /.test(c.textContent) && c.querySelector('.progress > div').style.width !== '' &&
			d && d.cells[4].textContent !== '–' && / %$/.test(d.cells[5].textContent);
	})()`, 10*time.Second)
	b.shot("overview")

	// Namespace: make a directory through the page.
	b.goTo("#/ns?path=/")
	b.do("mkdir", chromedp.Click(chromedp.CSS("#mkdir-btn")), chromedp.WaitVisible(chromedp.CSS("#mkdir-name")),
		chromedp.SendKeys(chromedp.CSS("#mkdir-name"), "dir1"), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("dir1 listed", rowJS("dir1")+` !== undefined`, 10*time.Second)

	// Upload a file named like markup, 9 MiB (three parts of 3 MiB).
	name := `<img src=x onerror=alert(1)>`
	data := make([]byte, 9<<20)
	rand.Read(data)
	local := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("choose the file", chromedp.SetUploadFiles(chromedp.CSS("#upload-input"), []string{local}))
	b.waitJS("the uploaded file listed with its size", `(() => { const r = `+rowJS(name)+`; return r && r.cells[2].textContent === '9.0 MiB'; })()`, 30*time.Second)
	f, err := r.fs.Open(ctx, "/"+name)
	if err != nil {
		t.Fatalf("the uploaded file through client.FS: %v", err)
	}
	got := make([]byte, len(data))
	n, _ := f.ReadAt(got, 0)
	f.Close()
	if n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("uploaded file read through client.FS: %d bytes, equal %v", n, bytes.Equal(got[:n], data))
	}

	// Drag and drop: a drop event carrying a file.
	b.do("drop a file", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['dropped through drag and drop'], 'dropped.txt'));
		document.getElementById('dropzone').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`))
	b.waitJS("dropped.txt listed", rowJS("dropped.txt")+` !== undefined`, 15*time.Second)
	if f, err := r.fs.Open(ctx, "/dropped.txt"); err != nil {
		t.Errorf("dropped file: %v", err)
	} else {
		buf := make([]byte, 100)
		n, _ := f.ReadAt(buf, 0)
		f.Close()
		if string(buf[:n]) != "dropped through drag and drop" {
			t.Errorf("dropped file holds %q", buf[:n])
		}
	}

	// Uploading over an existing name asks first, then replaces it.
	b.do("drop a file of the same name", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['the second dropped.txt'], 'dropped.txt'));
		document.getElementById('dropzone').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`))
	b.waitJS("the replace confirmation", `(() => { const d = document.getElementById('dialog'); return d.open && document.getElementById('dialog-title').textContent === 'Replace dropped.txt?'; })()`, 10*time.Second)
	b.do("replace", chromedp.Click(chromedp.CSS("#dialog-ok")))
	waitForCond(t, 15*time.Second, "dropped.txt replaced", func() bool {
		f, err := r.fs.Open(ctx, "/dropped.txt")
		if err != nil {
			return false
		}
		defer f.Close()
		buf := make([]byte, 100)
		n, _ := f.ReadAt(buf, 0)
		return string(buf[:n]) == "the second dropped.txt"
	})

	// The name is text, never markup: no <img> made, no alert.
	b.do("open details", chromedp.Evaluate[chromedp.Void](rowJS(name)+`.querySelector('a').click()`))
	b.waitJS("details of the file", `document.querySelector('#details h2') && document.querySelector('#details h2').textContent === `+jsString(name), 10*time.Second)
	if imgs := b.eval(`String(document.querySelectorAll('img').length)`); imgs != "0" {
		t.Errorf("%s <img> elements in the page: a name was rendered as HTML", imgs)
	}
	if b.alerts.Load() != 0 {
		t.Errorf("%d JavaScript dialogs opened", b.alerts.Load())
	}
	if txt := b.eval(rowJS(name) + `.cells[0].textContent`); txt != name {
		t.Errorf("row shows %q, want the exact name %q", txt, name)
	}
	b.shot("namespace")

	// Rename the directory (atomic move) through the page.
	b.do("rename dir1", chromedp.Evaluate[chromedp.Void](rowJS("dir1")+`.querySelector('button[data-action=rename]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#rename-to")), chromedp.Clear(chromedp.CSS("#rename-to")),
		chromedp.SendKeys(chromedp.CSS("#rename-to"), "/dir2"), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("dir2 listed instead of dir1", rowJS("dir2")+` !== undefined && `+rowJS("dir1")+` === undefined`, 10*time.Second)
	if in, err := r.fs.Meta().Resolve(ctx, "/dir2", true); err != nil || in.Type != 2 {
		t.Errorf("/dir2 through the client: %+v %v", in, err)
	}

	// A directory's delete says how much goes with it.
	for _, n := range []string{"/dir2/a", "/dir2/b", "/dir2/c"} {
		f, err := r.fs.Create(ctx, n, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("1234"), 0)
		f.Close()
	}
	b.do("delete dir2", chromedp.Evaluate[chromedp.Void](rowJS("dir2")+`.querySelector('button[data-action=delete]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")))
	b.waitJS("the count in the confirmation", `document.getElementById('dialog-body').textContent.includes('the 3 file(s) and 0 directorie(s) in it (12 B)')`, 10*time.Second)
	b.do("confirm", chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("dir2 gone", rowJS("dir2")+` === undefined`, 10*time.Second)

	// Delete asks first; cancelling keeps the file.
	b.do("delete, cancelled", chromedp.Evaluate[chromedp.Void](rowJS("dropped.txt")+`.querySelector('button[data-action=delete]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-cancel")), chromedp.Click(chromedp.CSS("#dialog-cancel")))
	time.Sleep(300 * time.Millisecond)
	if _, err := r.fs.Stat(ctx, "/dropped.txt"); err != nil {
		t.Errorf("cancelled delete removed the file: %v", err)
	}
	b.do("delete, confirmed", chromedp.Evaluate[chromedp.Void](rowJS("dropped.txt")+`.querySelector('button[data-action=delete]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("dropped.txt gone", rowJS("dropped.txt")+` === undefined`, 10*time.Second)

	// Access keys: create one; the secret is shown once.
	b.goTo("#/keys")
	b.do("create a key", chromedp.WaitVisible(chromedp.CSS("#create-key")), chromedp.Click(chromedp.CSS("#create-key")),
		chromedp.WaitVisible(chromedp.CSS("#key-desc")), chromedp.SendKeys(chromedp.CSS("#key-desc"), "made in the browser"),
		chromedp.Click(chromedp.CSS("#dialog-ok")), chromedp.WaitVisible(chromedp.CSS("#new-secret")), chromedp.WaitVisible(chromedp.CSS("#copy-secret")))
	access := b.eval(`document.getElementById('new-access').textContent`)
	secret := b.eval(`document.getElementById('new-secret').textContent`)
	if _, err := r.authenticates(ctx, access, secret); err != nil {
		t.Errorf("the key shown in the browser does not authenticate: %v", err)
	}
	b.shot("keys-created")
	b.do("close", chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("the new key listed", `[...document.querySelectorAll('#keys tbody tr')].some(tr => tr.dataset.key === `+jsString(access)+`)`, 10*time.Second)
	if b.eval(`document.getElementById('copy-secret') ? 'yes' : 'no'`) != "no" {
		t.Error("the copy button of the secret outlived the dialog")
	}
	if strings.Contains(b.eval(`document.documentElement.outerHTML`), secret) {
		t.Error("the secret is still in the page's HTML after the dialog closed")
	}
	b.shot("keys")

	// Sign out: back to the form, and the API refuses.
	b.do("sign out", chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin-access")))
	if st, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch('/api/overview').then(r => String(r.status))`, chromedp.EvalAwaitPromise)); err != nil || st != "401" {
		t.Errorf("API after sign-out: %q %v", st, err)
	}
}

func TestBrowserChains(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 4, Chains: 4, Replicas: 3}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/chains")
	allServing := `document.querySelectorAll('#chains tbody tr').length === 4 && !document.querySelector('#chains tr.degraded, #chains tr.unavailable') &&
		[...document.querySelectorAll('#chains .target')].every(e => e.dataset.public === 'serving')`
	b.waitJS("4 chains, every target serving", allServing, 15*time.Second)
	b.shot("chains")

	// Kill a storage node: its chains turn degraded, listed first and
	// highlighted, with its targets offline.
	c.Kill(1)
	b.waitJS("degraded chains first, with node 2's targets offline", `(() => {
		const rows = [...document.querySelectorAll('#chains tbody tr')];
		const bad = rows.filter(r => r.classList.contains('degraded'));
		return bad.length === 3 && rows[0].classList.contains('degraded') && rows[3].classList.contains('degraded') === false &&
			[...document.querySelectorAll('#chains .target')].filter(e => e.dataset.public === 'offline').length === 3;
	})()`, 20*time.Second)
	b.shot("chains-degraded")
	b.goTo("#/overview")
	b.waitJS("overview degraded with node 2 failed", `(() => {
		const h = document.querySelector('#health .badge');
		return h && h.textContent === 'degraded' && document.getElementById('health').textContent.includes('storage node 2');
	})()`, 15*time.Second)
	b.shot("overview-degraded")

	// Restart it: it syncs back and serves.
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	b.goTo("#/chains")
	b.waitJS("every target serving again", allServing, 30*time.Second)
	b.shot("chains-recovered")

	// Maintenance through the buttons: hold target 101 offline, release it.
	b.click("take 101 offline", `button[data-target="101"][data-action="offline"]`)
	b.do("take 101 offline: its dialog", chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("target 101 offline and marked held", `(() => { const e = document.querySelector('.target[data-target="101"]'); return e && e.dataset.public === 'offline' && e.textContent.includes('held by console: `+r.admin.AccessKey+`'); })()`, 15*time.Second)
	b.shot("chains-held")
	b.click("bring 101 online", `button[data-target="101"][data-action="online"]`)
	b.do("bring 101 online: its dialog", chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("every target serving after the release", allServing, 30*time.Second)

	// Lose the cluster: a banner, not a blank page, and the old figures greyed.
	c.KillMgmtd(0)
	b.waitJS("the lost-connection banner", `!document.getElementById('banner').hidden && document.getElementById('banner').textContent.includes('cluster') && document.body.classList.contains('stale')`, 20*time.Second)
	b.shot("banner")
}

// TestBrowserLastServingHold: taking a chain's last serving replica offline
// from the chains page is refused until the admin types the chain's id in a
// dialog that says what stops.
func TestBrowserLastServingHold(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 1, Replicas: 1}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/chains")
	b.waitJS("target 101 serving", `(() => { const e = document.querySelector('.target[data-target="101"]'); return e && e.dataset.public === 'serving'; })()`, 15*time.Second)
	b.click("take 101 offline", `button[data-target="101"][data-action="offline"]`)
	b.do("take 101 offline: its dialog", chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("the last-replica dialog", `(() => { const d = document.getElementById('dialog'); return d.open && document.getElementById('dialog-title').textContent.includes('last serving replica of chain 1') && !!document.getElementById('force-chain'); })()`, 15*time.Second)
	b.shot("chains-last-serving")
	b.do("type the chain id and force", chromedp.SendKeys(chromedp.CSS("#force-chain"), "1"), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("target 101 held offline", `(() => { const e = document.querySelector('.target[data-target="101"]'); return e && e.dataset.public !== 'serving' && e.textContent.includes('held by console: `+r.admin.AccessKey+`'); })()`, 15*time.Second)

	// The forced hold is in the audit trail, with who asked.
	b.goTo("#/audit")
	b.waitJS("the forced hold in the audit trail", `[...document.querySelectorAll('#audit tbody tr')].some(tr => tr.cells[2].textContent === 'hold target 101 offline (forced)' && tr.cells[1].textContent === 'console: `+r.admin.AccessKey+`')`, 10*time.Second)
	b.shot("audit")

	// Signing out leaves the sign-in form alone, and says so without alarm.
	b.do("sign out", chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin-access")))
	b.waitJS("the signed-in chrome gone after sign-out", signedOutChrome+` && document.getElementById('signin-error').classList.contains('info')`, 5*time.Second)
	b.shot("signed-out")
}

func waitForCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserNodeMaintenance: a node's maintenance from the overview shows
// its plan first, holds the node's targets, and ends from the same row.
func TestBrowserNodeMaintenance(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Chains: 2, Replicas: 2}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.click("maintenance of node 1", `button[data-node="1"][data-action="maintenance"]`)
	b.waitJS("the plan", `document.querySelectorAll('#maintenance-plan tbody tr').length === 2 &&
		[...document.querySelectorAll('#maintenance-plan tbody tr')].every(tr => tr.cells[2].textContent === 'held offline')`, 10*time.Second)
	b.shot("maintenance-plan")
	b.do("start it", chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("node 1's targets held", `!!document.querySelector('button[data-node="1"][data-action="end-maintenance"]') &&
		document.getElementById('services').textContent.includes('held by console: `+r.admin.AccessKey+`')`, 15*time.Second)
	b.click("end it", `button[data-node="1"][data-action="end-maintenance"]`)
	b.do("end it: its dialog", chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("node 1 out of maintenance", `!!document.querySelector('button[data-node="1"][data-action="maintenance"]')`, 15*time.Second)
}

// TestBrowserBigDirectory: a directory of 250 files lists in natural order
// with its total, pages by the URL, and searches within it.
func TestBrowserBigDirectory(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/big", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 250; i++ {
		f, err := r.fs.Create(ctx, fmt.Sprintf("/big/f-%d", i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/ns?path=/big")
	rows := `[...document.querySelectorAll('#listing tbody tr')].map(tr => tr.dataset.name)`
	b.waitJS("natural order with the total", `(() => { const n = `+rows+`; return document.getElementById('ns-total').textContent === '250 entries' &&
		n.length === 200 && n[0] === 'f-1' && n[1] === 'f-2' && n[9] === 'f-10' && document.querySelector('.pager').textContent.includes('page 1 of 2'); })()`, 15*time.Second)
	b.do("next page", chromedp.Click(chromedp.CSS("#next-page-bottom")))
	b.waitJS("page 2 in the URL", `(() => { const n = `+rows+`; return location.hash.includes('page=2') && n.length === 50 && n[0] === 'f-201'; })()`, 10*time.Second)
	b.do("search", chromedp.SendKeys(chromedp.CSS("#ns-search"), "f-2\r"))
	b.waitJS("the search's matches", `(() => { const n = `+rows+`; return location.hash.includes('q=f-2') && !location.hash.includes('page=') &&
		document.getElementById('ns-total').textContent.startsWith('62 matching') && n[0] === 'f-2' && n[1] === 'f-20'; })()`, 10*time.Second)
	b.shot("big-directory-search")
}

// TestBrowserPhoneWidth: at 390 px every page fits the screen's width (tables
// scroll inside their frames), the nav is all on screen, and a dialog fits.
func TestBrowserPhoneWidth(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	b := newTab(t, r.srv.URL)
	b.do("a phone's screen", chromedp.EmulateViewport(390, 844))
	b.signIn(r.admin)
	fits := `(() => document.documentElement.scrollWidth <= window.innerWidth &&
		[...document.querySelectorAll('#nav a, #signout')].every(e => { const r = e.getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth && r.width > 0; }))()`
	for _, page := range []string{"overview", "chains", "ns", "keys"} {
		b.goTo("#/" + page)
		b.waitJS(page+" at 390 px", `document.querySelector('#page h1') !== null && `+fits, 15*time.Second)
		b.shot("phone-" + page)
	}
	b.do("open a dialog", chromedp.Click(chromedp.CSS("#create-key")), chromedp.WaitVisible(chromedp.CSS("#key-desc")))
	b.waitJS("the dialog within the screen", `(() => { const r = document.getElementById('dialog').getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth; })() && `+fits, 5*time.Second)
	b.shot("phone-dialog")
}

// TestBrowserVersions: an admin turns versioning on from a bucket's
// details, sees a file's versions after an overwrite, downloads the old
// one, and restores it; the version it replaced is kept.
func TestBrowserVersions(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/ckpts", 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		t.Helper()
		f, err := r.fs.OpenFile(ctx, "/ckpts/model.bin", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte(body), 0)
		f.Close()
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/ns?path=/")
	b.waitJS("the bucket listed", rowJS("ckpts")+` !== undefined`, 15*time.Second)
	b.do("bucket details", chromedp.Evaluate[chromedp.Void](rowJS("ckpts")+`.querySelector('button').click()`))
	b.waitJS("the versioning button", `(() => { const x = document.querySelector('#details button[data-action=versioning]'); return x && x.textContent === 'Enable versioning'; })()`, 10*time.Second)
	b.do("enable versioning", chromedp.Click(chromedp.CSS(`#details button[data-action=versioning]`)), chromedp.WaitVisible(chromedp.CSS("#dialog-ok")),
		chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("versioning on", `(() => { const x = document.querySelector('#details button[data-action=versioning]'); return x && x.textContent === 'Suspend versioning'; })()`, 10*time.Second)

	// Two writes through a client: a new file, then a new version of it
	// (a new file renamed over it, as tools write).
	write("first epoch")
	f, err := r.fs.Create(ctx, "/ckpts/.tmp", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("second epoch"), 0)
	f.Close()
	if err := r.fs.Rename(ctx, "/ckpts/.tmp", "/ckpts/model.bin"); err != nil {
		t.Fatal(err)
	}
	b.goTo("#/ns?path=/ckpts")
	b.waitJS("the file listed", rowJS("model.bin")+` !== undefined`, 15*time.Second)
	b.do("file details", chromedp.Evaluate[chromedp.Void](rowJS("model.bin")+`.querySelector('a').click()`))
	rows := `[...document.querySelectorAll('#details table.versions tbody tr')]`
	b.waitJS("two versions", rows+`.length === 2 && `+rows+`[0].cells[1].textContent === 'current' && `+rows+`[1].cells[1].textContent === 'noncurrent'`, 10*time.Second)
	old := b.eval(rows + `[1].dataset.version`)
	// The old version's download link, fetched by the page (its session).
	b.do("download the old version", chromedp.Evaluate[chromedp.Void](`(() => {
		const a = `+rows+`[1].querySelector('a');
		fetch(a.href).then(r => r.text()).then(t => { window.__dl = t; });
	})()`))
	b.waitJS("the old version's bytes", `window.__dl === 'first epoch'`, 10*time.Second)
	if old == "" || old == "null" {
		t.Fatalf("the old version's id: %q", old)
	}
	b.do("restore", chromedp.Evaluate[chromedp.Void](rows+`[1].querySelector('button[data-action=restore]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("three versions after the restore", rows+`.length === 3`, 15*time.Second)
	got, err := r.fs.Open(ctx, "/ckpts/model.bin")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := got.ReadAt(buf, 0)
	got.Close()
	if string(buf[:n]) != "first epoch" {
		t.Fatalf("after the restore the file holds %q", buf[:n])
	}
	b.shot("versions")
}

// TestBrowserTrash: with the trash on, a tree deleted from the console is
// listed on the Trash page and restored from it, whole.
func TestBrowserTrash(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20, TrashDays: 7})
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/proj/run", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := r.fs.Create(ctx, "/proj/run/result.csv", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("a,b\n1,2\n"), 0)
	f.Close()
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/ns?path=/proj")
	b.waitJS("run listed", rowJS("run")+` !== undefined`, 15*time.Second)
	b.do("delete run", chromedp.Evaluate[chromedp.Void](rowJS("run")+`.querySelector('button[data-action=delete]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("run gone", rowJS("run")+` === undefined`, 10*time.Second)
	b.goTo("#/trash")
	trashRow := `[...document.querySelectorAll('#trash tbody tr')].find(tr => tr.cells[1] && tr.cells[1].textContent === '/proj/run/')`
	b.waitJS("the tree in the trash", trashRow+` !== undefined && document.getElementById('trash-info').textContent.includes('7 day')`, 15*time.Second)
	b.do("restore", chromedp.Evaluate[chromedp.Void](trashRow+`.querySelector('button[data-action=restore]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("restored", `document.getElementById('trash-done').textContent === 'Restored /proj/run.'`, 10*time.Second)
	in, err := r.fs.Meta().Resolve(ctx, "/proj/run/result.csv", false)
	if err != nil || in.Length != 8 {
		t.Fatalf("the restored file: %+v %v", in, err)
	}
	// Emptying: everything goes now.
	if err := r.fs.Remove(ctx, "/proj/run/result.csv"); err != nil {
		t.Fatal(err)
	}
	b.goTo("#/tasks")
	b.goTo("#/trash")
	b.waitJS("the file in the trash", `document.querySelectorAll('#trash tbody tr[data-ino]').length === 1`, 15*time.Second)
	b.do("empty", chromedp.Click(chromedp.CSS("#trash-empty")), chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("emptied", `document.getElementById('trash-done').textContent === 'Emptied the trash (1 entries).' && document.querySelectorAll('#trash tbody tr[data-ino]').length === 0`, 10*time.Second)
	if es, _, err := r.fs.Meta().TrashList(ctx); err != nil || len(es) != 0 {
		t.Fatalf("trash after emptying: %+v %v", es, err)
	}
	b.shot("trash")
}

// TestBrowserTasks: an admin collects a removed file now and runs fsck
// from the Tasks page; both are in the audit trail.
func TestBrowserTasks(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20, GCGrace: time.Hour})
	r := fsRig(t, c, false)
	ctx := context.Background()
	f, err := r.fs.Create(ctx, "/old.bin", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 2<<20), 0)
	f.Close()
	if err := r.fs.Remove(ctx, "/old.bin"); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/tasks")
	b.waitJS("the queue: one file in its grace period", `document.getElementById('gc-queue').textContent === '1 removed file(s) or tree(s) queued, 2.0 MiB: 0 due now (0 B), the rest within their grace period of 60 min.'`, 15*time.Second)
	b.do("collect with the grace", chromedp.WaitVisible(chromedp.CSS("#gc-run")), chromedp.Click(chromedp.CSS("#gc-no-grace")), chromedp.Click(chromedp.CSS("#gc-run")),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("the collection's result", `document.getElementById('gc-result').textContent.startsWith('Freed 1 file(s), 2.0 MiB')`, 30*time.Second)
	b.waitJS("the queue empty", `document.getElementById('gc-queue').textContent === 'The GC queue is empty.'`, 15*time.Second)
	b.do("fsck", chromedp.Click(chromedp.CSS("#fsck-run")))
	b.waitJS("fsck's report", `document.getElementById('fsck-result').textContent.includes('clean')`, 30*time.Second)
	b.shot("tasks")
}

// TestBrowserKeyRotation: the keys page rotates a key's secret, shows the
// new one once, and the old one stops working.
func TestBrowserKeyRotation(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	ctx := context.Background()
	k, err := r.fs.Keys().Create(ctx, access.Key{Description: "pipeline", Buckets: map[string]access.Permission{"data": access.Read}})
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/keys")
	row := `[...document.querySelectorAll('#keys tbody tr')].find(tr => tr.dataset.key === ` + jsString(k.ID) + `)`
	b.waitJS("the key listed", row+` !== undefined`, 15*time.Second)
	b.do("rotate", chromedp.Evaluate[chromedp.Void](row+`.querySelector('button[data-action=rotate]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("the new secret shown", `(() => { const s = document.getElementById('new-secret'); return s && s.textContent.length > 20 && s.textContent !== `+jsString(k.Secret)+`; })()`, 10*time.Second)
	secret := b.eval(`document.getElementById('new-secret').textContent`)
	b.do("done", chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("the secret gone from the page", `document.getElementById('new-secret') === null`, 10*time.Second)
	if _, err := r.authenticates(ctx, k.ID, k.Secret); err == nil {
		t.Error("the old secret still authenticates")
	}
	if _, err := r.authenticates(ctx, k.ID, secret); err != nil {
		t.Errorf("the shown secret: %v", err)
	}
}

// TestBrowserPreview: a text file's details show its start as text (markup
// in it stays text), a PNG's show it as an image, a binary file's none.
func TestBrowserPreview(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	ctx := context.Background()
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	files := map[string][]byte{"/notes.txt": []byte("hello <b>not bold</b>\nline 2\n"), "/dot.png": png, "/blob.bin": {0x00, 0x01, 0x02, 0x80, 0xff}}
	for p, data := range files {
		f, err := r.fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(data, 0)
		f.Close()
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/ns?path=/")
	open := func(name string) {
		t.Helper()
		b.waitJS(name+" listed", rowJS(name)+` !== undefined`, 15*time.Second)
		b.do("details of "+name, chromedp.Evaluate[chromedp.Void](rowJS(name)+`.querySelector('a').click()`))
		b.waitJS("details of "+name+" shown", `document.querySelector('#details h2') && document.querySelector('#details h2').textContent === `+jsString(name), 10*time.Second)
	}
	open("notes.txt")
	b.waitJS("the text preview", `(() => { const p = document.getElementById('preview-text'); return p && p.textContent.startsWith('hello <b>not bold</b>') && !document.querySelector('#details b'); })()`, 10*time.Second)
	open("dot.png")
	b.waitJS("the image preview", `(() => { const i = document.getElementById('preview-image'); return i && i.src.startsWith('data:image/png;base64,') && i.complete && i.naturalWidth === 1; })()`, 10*time.Second)
	open("blob.bin")
	b.waitJS("no preview of a binary file", `document.getElementById('details').textContent.includes('No preview') && !document.getElementById('preview-text') && !document.getElementById('preview-image')`, 10*time.Second)
}

// TestBrowserMultiSelect: entries checked on a page are deleted at once,
// after a confirmation naming them; select-all checks the page.
func TestBrowserMultiSelect(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/m/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/m/a", "/m/b", "/m/c", "/m/sub/x"} {
		f, err := r.fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/ns?path=/m")
	b.waitJS("listed", rowJS("a")+` !== undefined && `+rowJS("sub")+` !== undefined`, 15*time.Second)
	b.do("select a and sub", chromedp.Evaluate[chromedp.Void](rowJS("a")+`.querySelector('input.sel').click(); `+rowJS("sub")+`.querySelector('input.sel').click();`))
	b.waitJS("the button counts them", `document.getElementById('delete-selected').textContent === 'Delete 2 selected'`, 5*time.Second)
	b.waitJS("the download link names them", `document.getElementById('download-selected').textContent === 'Download 2 selected (zip)'`, 5*time.Second)
	b.do("fetch the download", chromedp.Evaluate[chromedp.Void](`fetch(document.getElementById('download-selected').href).then(r => r.arrayBuffer()).then(b => {
		const t = new TextDecoder().decode(b); window.zipGot = t.slice(0, 2) + ' ' + ['a', 'sub/', 'sub/x'].every(n => t.includes(n)); })`))
	b.waitJS("a zip of a and sub's tree", `window.zipGot === 'PK true'`, 10*time.Second)
	b.do("delete selected", chromedp.Click(chromedp.CSS("#delete-selected")), chromedp.WaitVisible(chromedp.CSS("#dialog-ok")))
	b.waitJS("the confirmation names them", `(() => { const t = document.getElementById('dialog-body').textContent; return t.includes('sub') && t.includes('a') && t.includes('with everything in them'); })()`, 5*time.Second)
	b.do("confirm", chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("a and sub gone, b and c left", rowJS("a")+` === undefined && `+rowJS("sub")+` === undefined && `+rowJS("b")+` !== undefined && `+rowJS("c")+` !== undefined`, 15*time.Second)
	b.do("select all", chromedp.Click(chromedp.CSS("#select-all")))
	b.waitJS("select-all checks the page", `document.getElementById('delete-selected').textContent === 'Delete 2 selected'`, 5*time.Second)
	for _, p := range []string{"/m/a", "/m/sub"} {
		if in, err := r.fs.Meta().Resolve(ctx, p, false); err == nil {
			t.Errorf("%s still there: %+v", p, in)
		}
	}
}

// TestBrowserClients: the Clients page lists the registered clients with
// their open files, and a file open for writing by the path it was created
// under, until it is closed.
func TestBrowserClients(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20})
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/proj/logs", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := r.fs.Create(ctx, "/proj/logs/train.log", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("step 1 loss 0.9\n"), 0); err != nil {
		t.Fatal(err)
	}
	me := strconv.FormatUint(r.fs.ClientID(), 16)
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/clients")
	openRow := `[...document.querySelectorAll('#sessions tbody tr[data-ino]')].find(tr => tr.cells[0].textContent === '/proj/logs/train.log')`
	b.waitJS("the open file listed", openRow+` !== undefined && `+openRow+`.cells[2].textContent === '`+me+`'`, 15*time.Second)
	clientRow := `document.querySelector('#clients tbody tr[data-client="` + me + `"]')`
	b.waitJS("its client with one open file", clientRow+` !== null && `+clientRow+`.cells[1].textContent === 'alive' && `+clientRow+`.cells[3].textContent === '1'`, 15*time.Second)
	b.shot("clients")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b.waitJS("closed: no longer listed", `document.querySelectorAll('#sessions tbody tr[data-ino]').length === 0 && `+clientRow+`.cells[3].textContent === '0'`, 15*time.Second)
}

// TestBrowserSnapshots: a snapshot made from the Snapshots page is listed
// with what it holds, its tree reads as it was after the live file changes,
// a delete in it is refused as read-only, and it goes with its delete
// button; both actions are in the audit trail.
func TestBrowserSnapshots(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20})
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/proj/run", 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		f, err := r.fs.Create(ctx, "/proj/run/result.csv", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte(body), 0)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("a,b\n1,2\n")
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/snapshots")
	b.waitJS("the empty list", `document.querySelector('#snapshots tbody').textContent.includes('No snapshots.')`, 15*time.Second)
	b.do("make", chromedp.Click(chromedp.CSS("#snap-create")), chromedp.WaitVisible(chromedp.CSS("#snap-path")),
		chromedp.SendKeys(chromedp.CSS("#snap-path"), "/proj/run"), chromedp.SendKeys(chromedp.CSS("#snap-name"), "before"),
		chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("made", `document.getElementById('snap-done').textContent.startsWith('Snapshot before of /proj/run: 1 files') && document.querySelector('#snapshots tbody tr[data-name=before]') !== null`, 15*time.Second)
	write("changed")
	sf, err := r.fs.Open(ctx, "/proj/.flyfs-snapshots/before/run/result.csv")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	n, _ := sf.ReadAt(got, 0)
	sf.Close()
	if string(got[:n]) != "a,b\n1,2\n" {
		t.Fatalf("the snapshot's file reads %q", got[:n])
	}
	// A delete inside it, from the namespace browser, is refused.
	b.goTo("#/ns?path=/proj/.flyfs-snapshots/before/run")
	b.waitJS("listed", rowJS("result.csv")+` !== undefined`, 15*time.Second)
	b.do("delete in the snapshot", chromedp.Evaluate[chromedp.Void](rowJS("result.csv")+`.querySelector('button[data-action=delete]').click()`),
		chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("refused", `[...document.querySelectorAll('[role=alert]')].some(e => e.textContent.includes('read-only'))`, 10*time.Second)
	b.goTo("#/snapshots")
	b.waitJS("listed again", `document.querySelector('#snapshots tbody tr[data-name=before]') !== null`, 15*time.Second)
	b.click("delete", `#snapshots tbody tr[data-name=before] button[data-action=delete]`)
	b.do("delete: its dialog", chromedp.WaitVisible(chromedp.CSS("#dialog-ok")), chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("deleted", `document.getElementById('snap-done').textContent === 'Deleted snapshot before.' && document.querySelector('#snapshots tbody').textContent.includes('No snapshots.')`, 10*time.Second)
	b.goTo("#/audit")
	b.waitJS("audited", `document.getElementById('audit').textContent.includes('snapshot before of /proj/run') && document.getElementById('audit').textContent.includes('delete snapshot before')`, 15*time.Second)
}

// TestBrowserChainTable: an admin opens the chain-table form on the Chains
// page, sees the proposed table's chains and balance figures change with
// its fields, is told when the ids exist already, and creates the chains.
func TestBrowserChainTable(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Chains: 2, Replicas: 2}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/chains")
	b.click("new chains", "#chains-new")
	b.waitJS("the proposed table", `!!document.getElementById('ct-figures') && document.getElementById('ct-figures').textContent.includes('3 disks on 3 nodes, 3 replicas, 8 chains') &&
		document.querySelectorAll('#ct-preview tbody tr').length === 8 && document.querySelector('#ct-preview tbody tr').dataset.chain === '3'`, 15*time.Second)
	set := func(id, v string) {
		b.eval(`(() => { const e = document.getElementById('` + id + `'); e.value = '` + v + `'; e.dispatchEvent(new Event('change')); return ''; })()`)
	}
	set("ct-replicas", "2")
	set("ct-count", "6")
	b.waitJS("2 replicas, 6 chains", `document.getElementById('ct-figures').textContent.includes('2 replicas, 6 chains') &&
		document.querySelectorAll('#ct-preview tbody tr').length === 6`, 10*time.Second)
	b.shot("chain-table")
	set("ct-first", "1")
	b.waitJS("ids that exist", `document.getElementById('ct-figures').textContent.includes('exists already') &&
		document.querySelectorAll('#ct-preview tbody tr').length === 0`, 10*time.Second)
	set("ct-first", "3")
	b.waitJS("the table again", `document.querySelectorAll('#ct-preview tbody tr').length === 6`, 10*time.Second)
	b.do("create", chromedp.Click(chromedp.CSS("#dialog-ok")))
	b.waitJS("chains 3..8 listed", `document.querySelectorAll('#chains tbody tr').length === 8 && !!document.querySelector('#chains tr[data-chain="8"]')`, 15*time.Second)
	resp, err := c.FS().Mgmtd().GetRouting(context.Background(), 0)
	if err != nil || len(resp.Info.Chains) != 8 {
		t.Fatalf("routing after create: %v", err)
	}
}

// TestBrowserOverviewRetained: the overview's namespace figure names the
// bytes of noncurrent versions, the trash and snapshots apart from live
// files.
func TestBrowserOverviewRetained(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20, TrashDays: 1})
	retainedTree(t, c.FS())
	r := fsRig(t, c, false)
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.waitJS("the namespace's bytes apart", `(() => { const t = document.getElementById('stats').textContent;
		return t.includes('1.5 KiB in 2 noncurrent versions') && t.includes('55.7 KiB in the trash') &&
			t.includes('87.9 KiB in snapshots') && t.includes('90.8 KiB in live files'); })()`, 20*time.Second)
	b.shot("overview-retained")
}

// TestBrowserLatencyAndNodeCharts: while clients read and write, the
// overview charts the cluster's read and write latency percentiles and one
// I/O and one latency chart per storage node; the overview's rates carry
// the same figures.
func TestBrowserLatencyAndNodeCharts(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Replicas: 2, Chains: 4}, ChunkSize: 1 << 20})
	r := fsRig(t, c, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // a steady load: write a file, read it back
		defer close(done)
		buf := make([]byte, 256<<10)
		for i := 0; ctx.Err() == nil; i++ {
			f, err := r.fs.Create(ctx, fmt.Sprintf("/load-%d", i%4), 0o644)
			if err != nil {
				continue
			}
			f.WriteAtContext(ctx, buf, 0)
			f.CloseContext(ctx)
			if g, err := r.fs.Open(ctx, fmt.Sprintf("/load-%d", i%4)); err == nil {
				g.ReadAtContext(ctx, buf, 0)
				g.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.waitJS("latency percentiles and a chart pair per node", `(() => {
		const lat = [...document.querySelectorAll('.chart[data-latency] .now')].map(e => e.textContent);
		const nodes = new Set([...document.querySelectorAll('#node-charts .chart')].map(e => e.dataset.node));
		return document.querySelectorAll('#node-charts .chart').length === 4 && nodes.has('1') && nodes.has('2') &&
			lat.length === 4 && lat.every(t => /p99|read/.test(t) && /(µs|ms| s)/.test(t));
	})()`, 30*time.Second)
	b.shot("overview-latency")
	bb := r.browser()
	bb.signIn(r.admin)
	var o struct {
		Rates []ratePoint `json:"rates"`
	}
	bb.must("GET", "/api/overview", nil, &o)
	seen := false
	for _, p := range o.Rates {
		if p.ReadP99 != nil && p.WriteP99 != nil && len(p.Nodes) == 2 {
			seen = true
			if *p.ReadP50 > *p.ReadP99 || *p.WriteP50 > *p.WriteP99 || *p.WriteP99 <= 0 {
				t.Errorf("percentiles out of order: %+v", p)
			}
		}
	}
	if !seen {
		t.Errorf("no rate with read and write percentiles and both nodes: %+v", o.Rates)
	}
}

// TestBrowserBucketSettings: a bucket's details list what the S3 API set on
// it under the S3 names, JSON indented, with the call that changes each,
// and the ones not set as such.
func TestBrowserBucketSettings(t *testing.T) {
	if chromiumPath() == "" {
		t.Skip("no Chromium found (install the Debian package chromium): browser tests skipped")
	}
	c := startFS(t)
	r := fsRig(t, c, false)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/logs", 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := r.fs.Stat(ctx, "/logs")
	if err != nil {
		t.Fatal(err)
	}
	// As the gateway keeps them (docs/s3-mapping.md).
	for name, v := range map[string]string{
		"user.s3.lifecycle":  `[{"ID":"expire-tmp","Status":"Enabled","Prefix":"tmp/","Expiration":{"Days":7}}]`,
		"user.s3.encryption": "AES256",
	} {
		if err := r.fs.Meta().SetXattr(ctx, in.ID, name, []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	b := newTab(t, r.srv.URL)
	b.signIn(r.admin)
	b.goTo("#/ns?path=/")
	b.waitJS("listed", rowJS("logs")+` !== undefined`, 15*time.Second)
	b.do("bucket details", chromedp.Evaluate[chromedp.Void](rowJS("logs")+`.querySelector('button').click()`))
	setting := func(attr string) string {
		return `document.querySelector('#bucket-settings tr[data-setting="` + attr + `"]')`
	}
	b.waitJS("the settings under their S3 names", `!!`+setting("user.s3.lifecycle")+` && (() => {
		const l = `+setting("user.s3.lifecycle")+`, e = `+setting("user.s3.encryption")+`, c = `+setting("user.s3.cors")+`;
		return l.cells[0].textContent === 'Lifecycle rules' && l.querySelector('pre').textContent.includes('\n    "ID": "expire-tmp"') &&
			l.cells[2].textContent === 's3api put-bucket-lifecycle-configuration' &&
			e.querySelector('pre').textContent === 'AES256' && c.cells[1].textContent === 'not set' &&
			!document.getElementById('details').textContent.includes('s3.encryption: AES256');
	})()`, 10*time.Second)
	b.shot("bucket-settings")
}
