// Checks that every package .ci/run packed carries what NuGet users read, and fails (exit code 1) naming the package
// and what it lacks:
//   dotnet run --file .ci/check-packages.cs -- PACKAGE-FOLDER SRC-FOLDER
// Expected: one package per project under SRC-FOLDER (its folder name is the package id), all of one version, each
// with a description, tags, authors, copyright, the license expression of the repository's LICENSE (MIT), its README
// (the readme element and the file in the package), the project URL, the repository (git, an https URL and the
// 40-digit commit it was built from), and a symbols package (.snupkg) with its pdbs. A library carries its assembly
// and XML docs under lib/; a sibling package it depends on is required at exactly the same version.
// Before it reads the real packages, the check proves itself: it removes each of those things in turn from a copy of
// one package and fails if it does not notice.
using System.IO.Compression;
using System.Text.RegularExpressions;
using System.Xml.Linq;

if (args.Length != 2 || !Directory.Exists(args[0]) || !Directory.Exists(args[1]))
{
    Console.Error.WriteLine("Usage: dotnet run --file .ci/check-packages.cs -- PACKAGE-FOLDER SRC-FOLDER");
    return 2;
}

var expectedIds = Directory.GetDirectories(args[1])
    .Where(directory => Directory.GetFiles(directory, "*.csproj").Length > 0)
    .Select(Path.GetFileName)
    .OfType<string>()
    .Order(StringComparer.Ordinal)
    .ToList();
var packages = Directory.GetFiles(args[0], "*.nupkg").Order(StringComparer.Ordinal).Select(Package.Read).ToList();
if (packages.Count == 0)
{
    Console.Error.WriteLine($"No .nupkg in {args[0]}.");
    return 1;
}

var selfTestFailures = PackageRules.SelfTest(packages.First(p => !p.IsTool));
foreach (var failure in selfTestFailures)
{
    Console.Error.WriteLine($"check-packages self-test: {failure}");
}

var problems = new List<string>();
var ids = packages.Select(p => p.Id).ToHashSet(StringComparer.OrdinalIgnoreCase);
problems.AddRange(expectedIds.Where(id => !ids.Contains(id)).Select(id => $"{id}: no package (src/{id} has a project)"));
problems.AddRange(packages.Where(p => !expectedIds.Contains(p.Id, StringComparer.OrdinalIgnoreCase)).Select(p => $"{p.Id}: a package with no project under src/"));
var versions = packages.Select(p => p.Version).Distinct(StringComparer.Ordinal).ToList();
if (versions.Count != 1)
{
    problems.Add($"the packages have {versions.Count} versions: {string.Join(", ", packages.Select(p => $"{p.Id} {p.Version}"))}");
}

foreach (var package in packages)
{
    problems.AddRange(PackageRules.Check(package, ids).Select(problem => $"{package.FileName}: {problem}"));
    var symbols = Path.ChangeExtension(package.Path, ".snupkg");
    if (!File.Exists(symbols))
    {
        problems.Add($"{package.FileName}: no symbols package ({Path.GetFileName(symbols)})");
    }
    else
    {
        using var zip = ZipFile.OpenRead(symbols);
        if (!zip.Entries.Any(entry => entry.FullName.EndsWith(".pdb", StringComparison.OrdinalIgnoreCase)))
        {
            problems.Add($"{Path.GetFileName(symbols)}: no .pdb inside");
        }
    }
}

foreach (var problem in problems)
{
    Console.Error.WriteLine($"check-packages: {problem}");
}

if (problems.Count > 0 || selfTestFailures.Count > 0)
{
    return 1;
}

Console.WriteLine($"check-packages: {packages.Count} packages, version {versions[0]}, each with description, tags, license, README, repository and commit, and symbols: {string.Join(", ", packages.Select(p => p.Id))}");
return 0;

/// <summary>A package: its file, its nuspec and the names of the files inside it.</summary>
internal sealed record Package(string Path, XElement Metadata, IReadOnlyDictionary<string, long> Files)
{
    public string FileName => System.IO.Path.GetFileName(Path);

    public string Id => Value("id") ?? "";

    public string Version => Value("version") ?? "";

    public bool IsTool => Metadata.Elements().Any(e => e.Name.LocalName == "packageTypes"
        && e.Elements().Any(t => (string?)t.Attribute("name") == "DotnetTool"));

    public string? Value(string element) => Element(element)?.Value.Trim();

    public XElement? Element(string element) => Metadata.Elements().FirstOrDefault(e => e.Name.LocalName == element);

    public static Package Read(string path)
    {
        using var zip = ZipFile.OpenRead(path);
        var nuspec = zip.Entries.Single(entry => !entry.FullName.Contains('/') && entry.FullName.EndsWith(".nuspec", StringComparison.OrdinalIgnoreCase));
        using var stream = nuspec.Open();
        var metadata = XDocument.Load(stream).Root!.Elements().First(e => e.Name.LocalName == "metadata");
        return new Package(path, metadata, zip.Entries.ToDictionary(entry => entry.FullName, entry => entry.Length, StringComparer.Ordinal));
    }
}

internal static partial class PackageRules
{
    /// <summary>What is missing from one package, in words; empty when nothing is.</summary>
    public static List<string> Check(Package package, IReadOnlySet<string> siblingIds)
    {
        var problems = new List<string>();
        void Require(bool condition, string problem)
        {
            if (!condition)
            {
                problems.Add(problem);
            }
        }

        var description = package.Value("description");
        Require(!string.IsNullOrWhiteSpace(description) && description != "Package Description", "no description");
        Require(!string.IsNullOrWhiteSpace(package.Value("tags")), "no tags");
        Require(!string.IsNullOrWhiteSpace(package.Value("authors")), "no authors");
        Require(!string.IsNullOrWhiteSpace(package.Value("copyright")), "no copyright");

        var license = package.Element("license");
        Require(license is not null && (string?)license.Attribute("type") == "expression" && license.Value.Trim() == "MIT",
            $"the license is not the expression MIT (the repository's LICENSE) but '{license?.Value}'");

        var readme = package.Value("readme");
        Require(!string.IsNullOrEmpty(readme), "no readme element");
        Require(readme is null || package.Files.TryGetValue(readme, out var length) && length > 0, $"the README '{readme}' is not in the package (or is empty)");

        Require(package.Value("projectUrl")?.StartsWith("https://", StringComparison.Ordinal) == true, "no https project URL");
        var repository = package.Element("repository");
        Require(repository is not null, "no repository element");
        if (repository is not null)
        {
            Require((string?)repository.Attribute("type") == "git", "the repository type is not git");
            Require(((string?)repository.Attribute("url"))?.StartsWith("https://", StringComparison.Ordinal) == true, $"the repository URL is not an https URL: '{(string?)repository.Attribute("url")}'");
            Require(CommitId().IsMatch((string?)repository.Attribute("commit") ?? ""), $"the repository has no commit id: '{(string?)repository.Attribute("commit")}'");
        }

        if (!package.IsTool)
        {
            Require(package.Files.ContainsKey($"lib/net10.0/{package.Id}.dll"), $"no lib/net10.0/{package.Id}.dll");
            Require(package.Files.ContainsKey($"lib/net10.0/{package.Id}.xml"), $"no XML docs (lib/net10.0/{package.Id}.xml)");
        }

        foreach (var dependency in package.Metadata.Descendants().Where(e => e.Name.LocalName == "dependency"))
        {
            var id = (string?)dependency.Attribute("id") ?? "";
            var version = (string?)dependency.Attribute("version") ?? "";
            Require(!siblingIds.Contains(id) || version == package.Version || version == $"[{package.Version}]" || version == $"[{package.Version}, )",
                $"depends on {id} {version}, not on the version packed with it ({package.Version})");
        }

        return problems;
    }

    /// <summary>
    /// Removes each required thing in turn from a copy of <paramref name="good"/> and returns a line for every removal
    /// <see cref="Check"/> did not notice (and one if the untouched package itself fails).
    /// </summary>
    public static List<string> SelfTest(Package good)
    {
        var failures = new List<string>();
        var none = new HashSet<string>();
        if (Check(good, none) is { Count: > 0 } own)
        {
            failures.Add($"{good.FileName} fails on its own: {string.Join("; ", own)}");
        }

        (string Name, Func<Package, Package> Break)[] removals =
        [
            ("the README file", p => p with { Files = p.Files.Where(f => f.Key != p.Value("readme")).ToDictionary() }),
            ("the readme element", p => Without(p, "readme")),
            ("the license", p => Without(p, "license")),
            ("the description", p => WithValue(p, "description", "")),
            ("the tags", p => Without(p, "tags")),
            ("the project URL", p => Without(p, "projectUrl")),
            ("the repository", p => Without(p, "repository")),
            ("the repository's commit", p => Edit(p, m => m.Elements().First(e => e.Name.LocalName == "repository").Attribute("commit")?.Remove())),
            ("the XML docs", p => p with { Files = p.Files.Where(f => !f.Key.EndsWith(".xml", StringComparison.Ordinal)).ToDictionary() }),
        ];
        foreach (var (name, @break) in removals)
        {
            if (Check(@break(good), none).Count == 0)
            {
                failures.Add($"a package without {name} passed the check");
            }
        }

        return failures;
    }

    private static Package Without(Package package, string element) => Edit(package, m => m.Elements().Where(e => e.Name.LocalName == element).Remove());

    private static Package WithValue(Package package, string element, string value) => Edit(package, m => m.Elements().First(e => e.Name.LocalName == element).Value = value);

    private static Package Edit(Package package, Action<XElement> edit)
    {
        var copy = new XElement(package.Metadata);
        edit(copy);
        return package with { Metadata = copy };
    }

    [GeneratedRegex("^[0-9a-f]{40}$")]
    private static partial Regex CommitId();
}
