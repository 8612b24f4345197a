using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Which packages a snippet's section names, so the snippet is compiled against those packages (and what they depend
/// on) only, as a reader's project that followed the section would be: the packages named in backticks in the nearest
/// heading above the snippet that names any, plus those the section's text names before the snippet (in backticks or
/// in a <c>dotnet add package</c> line); a page whose headings name none has the package it documents.
/// </summary>
internal static partial class SnippetPackages
{
    public const string Core = "BoundedWork";
    public const string Hosting = "BoundedWork.Hosting";
    public const string WorkQueues = "BoundedWork.WorkQueues";
    public const string AspNetCore = "BoundedWork.AspNetCore";
    public const string PostgreSql = "BoundedWork.PostgreSql";
    public const string OpenTelemetry = "BoundedWork.OpenTelemetry";
    public const string JwtBearer = "Microsoft.AspNetCore.Authentication.JwtBearer";

    /// <summary>Each package and the packages it depends on. The tool's app side is the console's local socket.</summary>
    private static readonly Dictionary<string, string[]> s_dependencies = new(StringComparer.Ordinal)
    {
        [Core] = [],
        [Hosting] = [Core],
        [WorkQueues] = [Hosting],
        [AspNetCore] = [WorkQueues],
        [PostgreSql] = [WorkQueues],
        [OpenTelemetry] = [Core],
        ["BoundedWork.Cli"] = [AspNetCore],
        [JwtBearer] = [],
        ["OpenTelemetry.Extensions.Hosting"] = [],
    };

    /// <summary>The package a page documents when its headings name none.</summary>
    private static readonly Dictionary<string, string> s_pages = new(StringComparer.Ordinal)
    {
        ["docs/executor.md"] = Core,
        ["docs/legacy-code.md"] = Core,
        ["docs/rate-limits.md"] = Core,
        ["docs/adaptive-workers.md"] = Core,
        ["docs/hosting.md"] = Hosting,
        ["docs/typed-queues.md"] = WorkQueues,
        ["docs/admin-console.md"] = AspNetCore,
        ["docs/dashboard.md"] = AspNetCore,
        ["docs/cli.md"] = AspNetCore,
        ["docs/durable-queues.md"] = PostgreSql,
        ["docs/cluster.md"] = PostgreSql,
        ["docs/cluster-limits.md"] = PostgreSql,
        ["docs/storage.md"] = PostgreSql,
        ["docs/opentelemetry.md"] = OpenTelemetry,
    };

    /// <summary>The packages the section before a snippet names (<paramref name="before"/>: the document up to the snippet), with their dependencies.</summary>
    public static IReadOnlySet<string>? Named(string document, string before)
    {
        var lines = before.Split('\n');
        var headingLine = Array.FindLastIndex(lines, IsHeading);
        var sectionText = string.Join("\n", lines.Skip(Math.Max(headingLine, 0)));

        var named = new HashSet<string>(StringComparer.Ordinal);
        for (var i = headingLine; i >= 0 && named.Count == 0; i--)
        {
            // The nearest heading that names a package, walking up to ever shallower headings.
            if (IsHeading(lines[i]) && (i == headingLine || Level(lines[i]) < Level(lines[headingLine])))
            {
                named.UnionWith(NamesIn(lines[i]));
            }
        }

        if (named.Count == 0)
        {
            if (s_pages.TryGetValue(document, out var page))
            {
                named.Add(page);
            }
            else if (PackageReadme().Match(document) is { Success: true } readme && s_dependencies.ContainsKey(readme.Groups["package"].Value))
            {
                named.Add(readme.Groups["package"].Value);
            }
            else
            {
                return null;
            }
        }

        named.UnionWith(NamesIn(sectionText));
        return Closure(named);
    }

    /// <summary>Whether a project with <paramref name="available"/> has every package <paramref name="needed"/> (null: all of them).</summary>
    public static bool Covers(IReadOnlySet<string>? available, IReadOnlySet<string>? needed) =>
        available is null || (needed is not null && needed.IsSubsetOf(available));

    public static IReadOnlySet<string> Closure(IEnumerable<string> packages)
    {
        var result = new HashSet<string>(StringComparer.Ordinal);
        var pending = new Stack<string>(packages);
        while (pending.TryPop(out var package))
        {
            if (result.Add(package))
            {
                foreach (var dependency in s_dependencies[package])
                {
                    pending.Push(dependency);
                }
            }
        }

        return result;
    }

    /// <summary>
    /// Whether an assembly of the test process (a path of TRUSTED_PLATFORM_ASSEMBLIES) is in a project that references
    /// <paramref name="packages"/>: the .NET shared framework always; the ASP.NET Core one as soon as anything beyond the
    /// core package is referenced (those sections are web apps); each package's own assemblies and its dependencies'.
    /// </summary>
    public static bool Includes(IReadOnlySet<string>? packages, string assemblyPath)
    {
        if (packages is null)
        {
            return true;
        }

        var path = assemblyPath.Replace('\\', '/');
        var file = Path.GetFileNameWithoutExtension(path);
        if (path.Contains("/shared/Microsoft.NETCore.App/", StringComparison.Ordinal)
            || file == "System.Threading.RateLimiting") // the core package's one dependency, from the .NET team
        {
            return true;
        }

        var web = packages.Count > 1 || !packages.Contains(Core);
        if (path.Contains("/shared/Microsoft.AspNetCore.App/", StringComparison.Ordinal))
        {
            return web;
        }

        if (file.StartsWith("BoundedWork", StringComparison.Ordinal))
        {
            return packages.Contains(file);
        }

        return (packages.Contains(Hosting) && file.StartsWith("Microsoft.Extensions.", StringComparison.Ordinal))
            || (packages.Contains(WorkQueues) && file.StartsWith("Polly", StringComparison.Ordinal))
            || (packages.Contains(PostgreSql) && file.StartsWith("Npgsql", StringComparison.Ordinal))
            || ((packages.Contains(OpenTelemetry) || packages.Contains("OpenTelemetry.Extensions.Hosting")) && file.StartsWith("OpenTelemetry", StringComparison.Ordinal))
            || (packages.Contains(JwtBearer) && (file == JwtBearer || file.StartsWith("Microsoft.IdentityModel.", StringComparison.Ordinal) || file.StartsWith("System.IdentityModel.", StringComparison.Ordinal)));
    }

    private static IEnumerable<string> NamesIn(string text) =>
        Named().Matches(text).Select(m => m.Groups["name"].Value).Where(s_dependencies.ContainsKey);

    private static bool IsHeading(string line) => line.StartsWith('#') && line.TrimStart('#').StartsWith(' ');

    private static int Level(string line) => line.Length - line.TrimStart('#').Length;

    [GeneratedRegex(@"(`|dotnet add package )(?<name>[A-Za-z][A-Za-z0-9.]*)")]
    private static partial Regex Named();

    [GeneratedRegex(@"^src/(?<package>[^/]+)/README\.md$")]
    private static partial Regex PackageReadme();
}
