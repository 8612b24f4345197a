using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Keeps what the documents (the README, the docs pages and the package READMEs) list in step with the code: tables without repeated rows, every list of the console's
/// settings fields equal to the fields a real console serves, and the repository's packages all named.
/// </summary>
public sealed partial class DocsConsistencyTests
{
    /// <summary>The documents users read: the README, the docs pages, the package READMEs and the benchmarks' guide.</summary>
    public static TheoryData<string> Documents() => [.. Documentation.Documents.Append("benchmarks/README.md")];

    [Theory]
    [MemberData(nameof(Documents))]
    public void Tables_HaveNoRepeatedRows(string document)
    {
        var repeated = new List<string>();
        foreach (var table in MarkdownTables(Read(document)))
        {
            var seenRows = new HashSet<string>(StringComparer.Ordinal);
            var seenKeys = new Dictionary<string, int>(StringComparer.Ordinal);
            foreach (var (line, cells) in table)
            {
                if (!seenRows.Add(string.Join('|', cells)))
                {
                    repeated.Add($"line {line}: the row is repeated: {string.Join(" | ", cells)}");
                    continue;
                }

                // A name in backquotes in the first column (an option, an instrument, an endpoint) is described once;
                // a shorthand (".completed" after "counters.submitted") names a field of the row's own object.
                foreach (Match key in BackquotedName().Matches(cells[0]).Where(m => !m.Groups["name"].Value.StartsWith('.')))
                {
                    if (!seenKeys.TryAdd(key.Groups["name"].Value, line))
                    {
                        repeated.Add($"line {line}: `{key.Groups["name"].Value}` already has a row at line {seenKeys[key.Groups["name"].Value]}");
                    }
                }
            }
        }

        Assert.True(repeated.Count == 0, $"{document}:\n{string.Join("\n", repeated)}");
    }

    [Fact]
    public void Tables_RowRepeatedOrNameDescribedTwice_IsFound()
    {
        const string text = """
            | Instrument | Kind |
            |---|---|
            | `a.b` | counter |
            | `c.d`, `a.b` | gauge |
            | `e` | counter |
            | `e` | counter |
            """;

        var rows = MarkdownTables(text).Single();

        Assert.Equal(4, rows.Count);
        Assert.Equal(["`c.d`, `a.b`", "gauge"], rows[1].Cells);
        Assert.Equal(6, rows[3].Line);
    }

    /// <summary>
    /// Every place a document lists the console's settings fields names exactly the fields a real console serves (the
    /// <c>settings</c> object of <c>GET {prefix}/executors/{name}</c>, "under the names PATCH takes"): the endpoint
    /// descriptions, the JSON field table, the metric's tag values, error messages and example answers.
    /// </summary>
    [Fact]
    public async Task SettingsFieldLists_InEveryDocument_AreTheFieldsTheConsoleServes()
    {
        var real = await ConsoleSettingsFieldsAsync();
        Assert.Contains("workers", real);

        var stale = new List<string>();
        var found = new Dictionary<string, int>(StringComparer.Ordinal);
        foreach (var document in Documentation.Documents)
        {
            var text = Read(document);
            foreach (var (kind, line, fields) in SettingsFieldLists(text))
            {
                found[kind] = found.GetValueOrDefault(kind) + 1;

                // The PATCH fields also pin and unpin (pinned, pinFor), which are not settings: AllowedFieldsTests
                // compares the quoted "allowed fields" with the console's own message.
                if (kind != "allowed fields" && !fields.ToHashSet(StringComparer.Ordinal).SetEquals(real))
                {
                    stale.Add($"{document}:{line} ({kind}) lists {string.Join(", ", fields)}; the console's fields are {string.Join(", ", real)}");
                }
            }
        }

        Assert.True(stale.Count == 0, string.Join("\n", stale));

        // Each kind of list is still there to check (a reworded sentence must not turn this test into a no-op).
        Assert.Equal(["JSON fields", "allowed fields", "any of", "example settings", "setting tag"], found.Keys.Order(StringComparer.Ordinal));
    }

    [Fact]
    public void SettingsFieldLists_FindEachKindOfList()
    {
        const string text = """
            | `PATCH /x/executors/{name}` | Change any of `workers`, `queueCapacity` in one validated step. |
            | `settings.workers`, `.queueCapacity` | The runtime settings. |
            (tags `boundedwork.executor`, `boundedwork.setting` = `workers`,
            `queueCapacity`); more
            "detail":"Unknown field 'speed'; the allowed fields are workers, queueCapacity."
             "current":{"workers":8,"queueCapacity":500},
            """;

        var lists = SettingsFieldLists(text).ToList();

        Assert.Equal(["JSON fields", "allowed fields", "any of", "example settings", "setting tag"], lists.Select(l => l.Kind).Order(StringComparer.Ordinal));
        Assert.All(lists, list => Assert.Equal(["workers", "queueCapacity"], list.Fields));
    }

    [Fact]
    public void Repository_Section_NamesEveryPackage()
    {
        var text = Read("docs/design.md");
        var start = text.IndexOf("\n## Repository", StringComparison.Ordinal);
        Assert.True(start >= 0, "docs/design.md has no Repository section.");
        var next = text.IndexOf("\n## ", start + 1, StringComparison.Ordinal);
        var section = next < 0 ? text[start..] : text[start..next];

        var packages = Directory.GetDirectories(Path.Combine(Documentation.RepositoryRoot, "src"))
            .Where(directory => Directory.GetFiles(directory, "*.csproj").Length > 0)
            .Select(directory => "src/" + Path.GetFileName(directory))
            .Order(StringComparer.Ordinal)
            .ToList();

        Assert.True(packages.Count >= 4, $"Found only {packages.Count} projects under src/.");
        Assert.All(packages, package => Assert.True(section.Contains($"`{package}`", StringComparison.Ordinal), $"The Repository section does not name `{package}`."));
    }

    /// <summary>
    /// The README's second set-up command is <c>./test.sh</c>, which installs what the tests need (each package named in
    /// the README's Set up section) and runs the README's <c>dotnet test</c> command; CI runs the same script and
    /// names the same command.
    /// </summary>
    [Fact]
    public void SetUp_TestCommand_IsTestSh_WhichInstallsWhatTheReadmeSays_AndCiRunsIt()
    {
        var readme = Read("README.md");
        var setUp = readme[readme.IndexOf("## Set up", StringComparison.Ordinal)..readme.IndexOf("\n## Quick start", StringComparison.Ordinal)];
        var commands = FirstBashBlock().Match(setUp).Groups["code"].Value.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(2, commands.Length);
        Assert.StartsWith("./test.sh ", commands[1], StringComparison.Ordinal);
        var testCommand = DotnetTest().Match(readme).Value.Trim();
        Assert.Equal("dotnet test BoundedWork.sln", testCommand);

        var script = Read("test.sh");
        Assert.Contains("exec " + testCommand + " \"$@\"", script, StringComparison.Ordinal);
        if (!OperatingSystem.IsWindows())
        {
            Assert.True((File.GetUnixFileMode(Path.Combine(Documentation.RepositoryRoot, "test.sh")) & UnixFileMode.UserExecute) != 0, "test.sh is not executable.");
        }

        var installs = InstalledPackage().Matches(script).Select(m => m.Groups["package"].Value).Distinct().ToList();
        Assert.Equal(["chromium", "postgresql"], installs);
        Assert.All(installs, package => Assert.Contains($"`{package}`", setUp, StringComparison.Ordinal));

        var ci = Read(".ci/run");
        Assert.Matches(new Regex(@"^\./test\.sh$", RegexOptions.Multiline), ci);
        Assert.Contains(testCommand, ci, StringComparison.Ordinal);
    }

    /// <summary>The settings fields of a real console on Kestrel: the keys of an executor's <c>settings</c> object.</summary>
    private static async Task<IReadOnlyList<string>> ConsoleSettingsFieldsAsync() =>
        [.. (await RealConsole.GetAsync("/executors/payments")).GetProperty("settings").EnumerateObject().Select(p => p.Name)];

    /// <summary>Every list of settings fields in a document, by kind, with its line and the fields it names.</summary>
    private static IEnumerable<(string Kind, int Line, string[] Fields)> SettingsFieldLists(string text)
    {
        foreach (Match match in AllowedFields().Matches(text))
        {
            yield return ("allowed fields", LineOf(text, match.Index), match.Groups["list"].Value.Split(", "));
        }

        foreach (Match match in AnyOf().Matches(text))
        {
            yield return ("any of", LineOf(text, match.Index), Names(match.Groups["list"].Value));
        }

        foreach (Match match in JsonFieldsRow().Matches(text))
        {
            yield return ("JSON fields", LineOf(text, match.Index), ["workers", .. Names(match.Groups["rest"].Value)]);
        }

        foreach (Match match in SettingTag().Matches(text))
        {
            yield return ("setting tag", LineOf(text, match.Index), Names(match.Groups["list"].Value));
        }

        foreach (Match match in ExampleSettings().Matches(text))
        {
            yield return ("example settings", LineOf(text, match.Index), [.. JsonKey().Matches(match.Groups["object"].Value).Select(key => key.Groups["key"].Value)]);
        }

        static string[] Names(string list) => [.. BackquotedName().Matches(list).Select(m => m.Groups["name"].Value.TrimStart('.'))];
    }

    /// <summary>The markdown tables outside code blocks: per table, each body row's line number and trimmed cells.</summary>
    private static List<List<(int Line, string[] Cells)>> MarkdownTables(string text)
    {
        var tables = new List<List<(int Line, string[] Cells)>>();
        List<(int Line, string[] Cells)>? table = null;
        var inCode = false;
        var lines = text.Split('\n');
        for (var i = 0; i < lines.Length; i++)
        {
            var line = lines[i].Trim();
            if (line.StartsWith("```", StringComparison.Ordinal))
            {
                inCode = !inCode;
            }

            if (inCode || !line.StartsWith('|'))
            {
                table = null;
                continue;
            }

            var cells = line.Trim('|').Split('|').Select(cell => cell.Trim()).ToArray();
            if (table is null)
            {
                table = [];
                tables.Add(table);
                continue; // the header row
            }

            if (cells.All(cell => cell.Length > 0 && cell.Trim(':', '-').Length == 0))
            {
                continue; // the separator row
            }

            table.Add((i + 1, cells));
        }

        return tables;
    }

    private static int LineOf(string text, int index) => text.AsSpan(0, index).Count('\n') + 1;

    private static string Read(string document) => Documentation.Read(document);

    [GeneratedRegex(@"```bash\n(?<code>.*?)```", RegexOptions.Singleline)]
    private static partial Regex FirstBashBlock();

    [GeneratedRegex(@"dotnet test[^\n`#]*")]
    private static partial Regex DotnetTest();

    [GeneratedRegex(@"missing\+=\((?<package>[a-z0-9-]+)\)")]
    private static partial Regex InstalledPackage();

    [GeneratedRegex(@"`(?<name>[^`]+)`")]
    private static partial Regex BackquotedName();

    [GeneratedRegex(@"the allowed fields are (?<list>[A-Za-z]+(?:, [A-Za-z]+)*)")]
    private static partial Regex AllowedFields();

    [GeneratedRegex(@"any of (?<list>`[A-Za-z]+`(?:,\s+`[A-Za-z]+`)*)")]
    private static partial Regex AnyOf();

    [GeneratedRegex(@"`settings\.workers`(?<rest>(?:, `\.[A-Za-z]+`)*)")]
    private static partial Regex JsonFieldsRow();

    [GeneratedRegex(@"`boundedwork\.setting` = (?<list>`[A-Za-z]+`(?:,\s+`[A-Za-z]+`)*)")]
    private static partial Regex SettingTag();

    [GeneratedRegex(@"""(?:settings|previous|current)"":(?<object>\{[^{}]*\})")]
    private static partial Regex ExampleSettings();

    [GeneratedRegex(@"""(?<key>[A-Za-z]+)"":")]
    private static partial Regex JsonKey();
}
