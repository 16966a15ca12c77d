use super::*;
use quire_notes::{Kind, NewNote, NoteTree, Provenance};

/// A project map note with `body` that cites `files`, as the note-taker
/// writes one.
fn note(title: &str, body: &str, files: &[&str]) -> Note {
    let dir = tempfile::tempdir().unwrap();
    let tree = NoteTree::open(dir.path()).unwrap();
    tree.create(
        NewNote::project("shop", "map", Kind::Architecture, title)
            .provenance(Provenance {
                files: files.iter().map(|f| f.to_string()).collect(),
                ..Provenance::default()
            })
            .body(body),
    )
    .unwrap()
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A long module: many functions, so it is shown by definition.
fn big_module() -> String {
    let mut text = String::from("import itertools\n\n");
    for i in 0..60 {
        text.push_str(&format!(
            "def filler_{i}(iterable):\n    \"\"\"Filler number {i}.\"\"\"\n    return list(iterable)\n\n\n"
        ));
    }
    text.push_str(
        "def sliced(seq, n, strict=False):\n    \"\"\"Yield slices of length n.\"\"\"\n    iterator = takewhile(len, (seq[i : i + n] for i in count(0, n)))\n    return iterator\n\n\n",
    );
    text.push_str("def last(iterable):\n    return list(iterable)[-1]\n");
    text
}

fn big_tests() -> String {
    let mut text = String::from("from unittest import TestCase\n\n\n");
    for i in 0..40 {
        text.push_str(&format!(
            "class Filler{i}Tests(TestCase):\n    def test_it(self):\n        self.assertTrue(True)\n\n\n"
        ));
    }
    text.push_str(
        "class SlicedTests(TestCase):\n    def test_even(self):\n        self.assertEqual(list(sliced('ab', 1)), ['a', 'b'])\n\n    def test_odd(self):\n        pass\n",
    );
    text
}

const SLICED_TASK: &str = "sliced() with a negative n silently returns a wrong result\n\nPassing a negative size doesn't fail:\n\n    >>> list(sliced('ABCDEFG', -1))\n    ['ABCDEF']\n\nThe last call should raise ValueError.\n";

#[test]
fn a_function_the_task_names_is_shown_from_a_cited_file_with_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pkg/more.py", &big_module());
    write(root, "tests/test_more.py", &big_tests());
    // Not cited by any note: never looked at.
    write(
        root,
        "vendor/copy.py",
        "def sliced(seq, n):\n    return seq\n",
    );
    let map = note(
        "Project map",
        "- functions: `pkg/more.py`; tests: `tests/test_more.py`, one class per function",
        &[],
    );
    let excerpts = plan(SLICED_TASK, &[&map], root, 8_000);
    let shown: Vec<(&str, Option<&str>, Why)> = excerpts
        .iter()
        .map(|e| (e.path.as_str(), e.symbol.as_deref(), e.why))
        .collect();
    assert_eq!(
        shown,
        vec![
            // Its file's imports come along, so an import can be changed too.
            ("pkg/more.py", Some("imports"), Why::TaskNamesIt),
            ("pkg/more.py", Some("sliced"), Why::TaskNamesIt),
            ("tests/test_more.py", Some("SlicedTests"), Why::ItsTests),
        ]
    );
    assert_eq!(excerpts[0].text, "1| import itertools");
    let sliced = &excerpts[1];
    assert!(sliced.text.contains("| def sliced(seq, n, strict=False):"));
    assert!(sliced.text.contains("|     return iterator"));
    assert!(!sliced.text.contains("def last"), "one definition only");
    let tests = &excerpts[2];
    assert!(tests.text.contains("def test_even"));
    assert!(
        !tests.text.contains("def test_odd"),
        "up to its first method"
    );
    // `last` is a function here too, but the task says "last" in prose.
    assert!(excerpts.iter().all(|e| e.symbol.as_deref() != Some("last")));
}

#[test]
fn a_note_line_about_the_task_brings_the_definitions_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut orders = String::from(
        "from src.coupons import CouponBook\n\n\nclass OrderService:\n    \"\"\"Orders.\"\"\"\n\n",
    );
    orders.push_str("    def place_order(self, customer_id, items, coupon=None):\n        discount = self._coupons.discount_for(coupon)\n        return discount\n\n");
    for i in 0..40 {
        orders.push_str(&format!(
            "    def helper_{i}(self):\n        \"\"\"Helper {i} of the service, kept long on purpose.\"\"\"\n        return {i}\n\n"
        ));
    }
    orders.push_str("    def ship(self, order_id):\n        return order_id\n");
    write(root, "src/orders.py", &orders);
    write(
        root,
        "src/coupons.py",
        "class CouponBook:\n    def get(self, code):\n        return self._coupons[code]\n",
    );
    let map = note(
        "Shop map",
        "- Checkout places an order with its coupon: `OrderService.place_order` in src/orders.py (reserves stock)\n- Shipping: `OrderService.ship` marks an order shipped\n- Coupons: src/coupons.py",
        &["src/orders.py", "src/coupons.py"],
    );
    let task = "Coupon codes are ignored at checkout\n\nA coupon typed in lower case is not found in the coupon book, and checkout charges full price.";
    let excerpts = plan(task, &[&map], root, 8_000);
    let shown: Vec<(&str, Option<&str>, Why)> = excerpts
        .iter()
        .map(|e| (e.path.as_str(), e.symbol.as_deref(), e.why))
        .collect();
    assert_eq!(
        shown,
        vec![
            // Small: whole; named in words ("coupon book").
            ("src/coupons.py", None, Why::TaskNamesIt),
            ("src/orders.py", Some("imports"), Why::NoteNamesIt),
            (
                "src/orders.py",
                Some("OrderService.place_order"),
                Why::NoteNamesIt
            ),
        ]
    );
    // The shipping line shares no words with the task.
    assert!(!excerpts[2].text.contains("def ship"));
}

#[test]
fn the_budget_holds_and_the_best_named_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pkg/more.py", &big_module());
    write(root, "tests/test_more.py", &big_tests());
    let map = note(
        "Project map",
        "- functions: pkg/more.py, tests/test_more.py",
        &[],
    );
    let sliced_chars = numbered_lines(&big_module(), 302, 306).chars().count();
    // Room for the function, not for its imports or tests as well.
    let excerpts = plan(SLICED_TASK, &[&map], root, sliced_chars + 10);
    assert_eq!(excerpts.len(), 1, "{excerpts:?}");
    assert_eq!(excerpts[0].symbol.as_deref(), Some("sliced"));
    let used: usize = excerpts.iter().map(|e| e.chars).sum();
    assert!(used <= sliced_chars + 10);
    // Too small for anything: nothing, rather than a cut definition.
    assert!(plan(SLICED_TASK, &[&map], root, 20).is_empty());
    assert!(plan(SLICED_TASK, &[&map], root, 0).is_empty());
}

#[test]
fn nothing_is_shown_for_names_the_copy_no_longer_defines_or_files_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    write(&root, "pkg/more.py", "def chunked(it, n):\n    return it\n");
    write(
        dir.path(),
        "outside.py",
        "def sliced(seq, n):\n    return seq\n",
    );
    let map = note(
        "Project map",
        "- `sliced` lives in pkg/more.py; see also ../outside.py and /etc/passwd.py",
        &["../outside.py", "pkg/gone.py"],
    );
    assert!(plan(SLICED_TASK, &[&map], &root, 8_000).is_empty());
}

#[test]
fn a_task_about_something_else_gets_no_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pkg/more.py", &big_module());
    let map = note(
        "Project map",
        "- slicing helpers such as `sliced` and `filler_3` are in pkg/more.py",
        &["pkg/more.py"],
    );
    let task = "Add a changelog entry for the 2.0 release and fix the typo in README.";
    assert!(plan(task, &[&map], root, 8_000).is_empty());
    assert!(plan(SLICED_TASK, &[], root, 8_000).is_empty());
}

#[test]
fn names_split_into_words_and_code_is_told_from_prose() {
    assert_eq!(name_words("CouponBook"), vec!["coupon", "book"]);
    assert_eq!(name_words("place_order"), vec!["place", "order"]);
    assert_eq!(name_words("HTTPServer"), vec!["http", "server"]);
    assert_eq!(name_words("__getitem__"), vec!["getitem"]);
    assert_eq!(stem("coupons"), "coupon");
    assert_eq!(stem("categories"), "category");
    assert_eq!(stem("class"), "class");
    assert_eq!(stem("classes"), "class");
    assert_eq!(stem("boxes"), "box");
    // A word's plural and its singular meet: "invoices" is `Invoice`.
    for (plural, singular) in [
        ("invoices", "invoice"),
        ("codes", "code"),
        ("prices", "price"),
    ] {
        assert_eq!(stem(plural), stem(singular), "{plural}");
    }
    let task = TaskTerms::of(
        "chunked(): the last chunk\n\nUse `tail` or sliced() like seq.islice, InvalidCouponError and place_order; the first one.\n    >>> spy(it)\n",
    );
    for name in [
        "chunked",
        "tail",
        "sliced",
        "islice",
        "InvalidCouponError",
        "place_order",
        "spy",
    ] {
        assert!(task.code_names.contains_key(name), "{name} is code");
    }
    for word in ["last", "first", "one", "the", "like"] {
        assert!(!task.code_names.contains_key(word), "{word} is prose");
    }
    assert!(task.title.contains("chunked"));
    assert!(task.words.contains("chunk"));
}

#[test]
fn note_lines_give_dotted_and_bare_names() {
    let names =
        dotted_names("see `OrderService.place_order` and CouponBook.get, `tail`. Then done.");
    let code: Vec<&str> = names
        .iter()
        .filter(|(_, code)| *code)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(
        code,
        vec!["OrderService.place_order", "CouponBook.get", "tail"]
    );
    assert_eq!(names.len(), 7, "{names:?}");
}

#[test]
fn modules_next_to_cited_ones_and_the_class_a_title_names_are_looked_at() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/orders.py",
        "def place_order(items):\n    return items\n",
    );
    write(
        root,
        "src/coupons.py",
        "class Coupon:\n    code: str\n\n\nclass CouponBook:\n    def get(self, code):\n        return code\n",
    );
    write(root, "src/catalog.py", "class Product:\n    sku: str\n");
    write(
        root,
        "tests/test_orders.py",
        "def test_place():\n    pass\n",
    );
    write(
        root,
        "tests/test_coupons.py",
        "def test_get(book):\n    assert book.get('A')\n",
    );
    write(
        root,
        "tests/conftest.py",
        "import pytest\n\n\n@pytest.fixture\ndef book():\n    return None\n",
    );
    // Not next to a cited source file: never looked at.
    write(root, "vendor/coupons.py", "class Coupon:\n    pass\n");
    let map = note(
        "Shop map",
        "- Checkout: `src/orders.py` `place_order`; tests in `tests/test_orders.py`",
        &[],
    );
    let task = "Coupon codes are silently ignored\n\nA code typed in lower case is not found.";
    let shown: Vec<(String, Option<String>, Why)> = plan(task, &[&map], root, 8_000)
        .into_iter()
        .map(|e| (e.path, e.symbol, e.why))
        .collect();
    assert_eq!(
        shown,
        vec![
            ("src/coupons.py".to_string(), None, Why::TaskNamesIt),
            // The fixtures the tests use come with them.
            ("tests/conftest.py".to_string(), None, Why::ItsTests),
            ("tests/test_coupons.py".to_string(), None, Why::ItsTests),
        ]
    );
    // Without a note citing anything there, nothing.
    let elsewhere = note("Docs map", "- docs live in `docs/`", &[]);
    assert!(plan(task, &[&elsewhere], root, 8_000).is_empty());
}

#[test]
fn a_long_files_imports_come_last_when_room_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut module = String::new();
    for i in 0..30 {
        module.push_str(&format!("from pkg.m{i} import f{i}\n"));
    }
    module.push_str("\n\n");
    module.push_str(&big_module());
    write(root, "pkg/more.py", &module);
    let map = note("Project map", "- functions: `pkg/more.py`", &[]);
    let excerpts = plan(SLICED_TASK, &[&map], root, 8_000);
    let imports = excerpts
        .iter()
        .find(|e| e.symbol.as_deref() == Some("imports"))
        .expect("imports shown");
    // The 30 lines written here, a blank, then big_module()'s own import.
    assert_eq!((imports.start, imports.end), (1, 33));
    // Too little room for them after the function: the function alone.
    let sliced = excerpts
        .iter()
        .find(|e| e.symbol.as_deref() == Some("sliced"))
        .unwrap();
    let tight = plan(SLICED_TASK, &[&map], root, sliced.chars + 50);
    assert_eq!(tight.len(), 1);
    assert_eq!(tight[0].symbol.as_deref(), Some("sliced"));
}

#[test]
fn a_task_that_adds_a_function_sees_where_its_named_neighbours_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut module =
        String::from("__all__ = [\n    'chunked',\n    'derangements',\n    'sliced',\n]\n\n\n");
    module.push_str(&big_module());
    module.push_str("\n\ndef derangements(iterable):\n    return iterable\n");
    write(root, "pkg/more.py", &module);
    write(
        root,
        "docs/api.rst",
        "Combinatorics\n=============\n\n.. autofunction:: derangements\n.. autofunction:: powerset\n",
    );
    let map = note(
        "Project map",
        "- functions: `pkg/more.py`; a new one is also listed in `__all__` and docs/api.rst",
        &[],
    );
    let task = "Add subfactorial() to count derangements\n\n    >>> subfactorial(4) == ilen(derangements(range(4)))\n    True\n";
    let excerpts = plan(task, &[&map], root, 8_000);
    let listed: Vec<(&str, usize, usize)> = excerpts
        .iter()
        .filter(|e| e.why == Why::WhereListed)
        .map(|e| (e.path.as_str(), e.start, e.end))
        .collect();
    // In more.py the listing lies in the import block shown anyway (an
    // `import` follows `__all__` here), which takes it in.
    assert_eq!(listed, vec![("docs/api.rst", 3, 5)]);
    assert!(
        excerpts
            .iter()
            .any(|e| e.path == "pkg/more.py" && e.text.contains("3|     'derangements',")),
        "{excerpts:?}"
    );
    // A task about an existing function (it adds no name) gets no listings.
    let fix = "derangements() returns the input\n\n    >>> list(derangements('ab'))\n";
    assert!(
        plan(fix, &[&map], root, 8_000)
            .iter()
            .all(|e| e.why != Why::WhereListed)
    );
}

#[test]
fn indexing_an_instance_of_a_named_class_brings_its_getitem() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut module = String::new();
    module.push_str("class numeric_range:\n    \"\"\"A range of any numbers.\"\"\"\n\n");
    for i in 0..60 {
        module.push_str(&format!(
            "    def helper_{i}(self):\n        return {i}\n\n"
        ));
    }
    module.push_str("    def __getitem__(self, key):\n        return key\n\n    def __len__(self):\n        return 0\n");
    write(root, "pkg/more.py", &module);
    let map = note("Project map", "- functions: `pkg/more.py`", &[]);
    let task = "numeric_range slicing with a negative step is empty\n\n    >>> nr = numeric_range(0, 10, 2)\n    >>> list(nr[::-1])\n    []\n";
    let shown: Vec<Option<String>> = plan(task, &[&map], root, 600)
        .into_iter()
        .map(|e| e.symbol)
        .collect();
    assert_eq!(shown, vec![Some("numeric_range.__getitem__".to_string())]);
}

#[test]
fn a_title_naming_a_class_in_the_plural_brings_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/pricing.py", "def vat(net):\n    return net\n");
    write(
        root,
        "src/invoices.py",
        "class Invoice:\n    total: int\n\n\ndef render(invoice):\n    return ''\n",
    );
    let map = note("Shop map", "- Pricing: `src/pricing.py` `vat`", &[]);
    let task = "Charge shipping on invoices (free from 50 EUR)\n\nA flat fee per order.";
    let shown: Vec<String> = plan(task, &[&map], root, 8_000)
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(shown, vec!["src/invoices.py".to_string()]);
}

#[test]
fn a_new_name_sees_where_it_sorts_in_a_sorted_list() {
    let text = "x = 1\n__all__ = [\n    'chunked',\n    'derangements',\n    'sliced',\n    'substrings',\n    'tail',\n]\n";
    // Between 'sliced' and 'substrings' ("subf" < "subs").
    assert_eq!(sorted_place(text, 4, "subfactorial"), Some((5, 6)));
    assert_eq!(sorted_place(text, 4, "tab"), Some((6, 7)));
    // Before the first, after the last.
    assert_eq!(sorted_place(text, 4, "always"), Some((3, 3)));
    assert_eq!(sorted_place(text, 4, "zip_longest"), Some((7, 7)));
    // Not a list line, or an unsorted list: nothing.
    assert_eq!(sorted_place(text, 1, "subfactorial"), None);
    let unsorted = "__all__ = [\n    'tail',\n    'chunked',\n    'sliced',\n]\n";
    assert_eq!(sorted_place(unsorted, 2, "subfactorial"), None);
    // One entry out of place among many still sorts.
    let mut mostly = String::from("__all__ = [\n");
    for name in [
        "a1", "a2", "a3", "a4", "a5", "zz", "b1", "b2", "b3", "b4", "b5", "c1",
    ] {
        mostly.push_str(&format!("    '{name}',\n"));
    }
    mostly.push_str("]\n");
    assert_eq!(sorted_place(&mostly, 3, "b35"), Some((10, 11)));
}
