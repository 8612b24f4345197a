using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>One fenced <c>csharp</c> block of a README.</summary>
public sealed record ReadmeSnippet(string Document, int Line, string Code)
{
    public override string ToString() => $"{Document}:{Line}";
}

/// <summary>Finds the user documentation and its C# snippets.</summary>
internal static partial class ReadmeSnippets
{
    public static string RepositoryRoot { get; } = FindRoot();

    /// <summary>The READMEs users read: the repository's and each package's.</summary>
    public static IReadOnlyList<string> Documents { get; } =
    [
        "README.md",
        .. Directory.GetDirectories(Path.Combine(RepositoryRoot, "src"))
            .Select(directory => Path.Combine(directory, "README.md"))
            .Where(File.Exists)
            .Select(path => Path.GetRelativePath(RepositoryRoot, path).Replace('\\', '/'))
            .Order(StringComparer.Ordinal),
    ];

    public static IReadOnlyList<ReadmeSnippet> In(string document)
    {
        var text = File.ReadAllText(Path.Combine(RepositoryRoot, document)).ReplaceLineEndings("\n");
        return [.. CSharpBlock().Matches(text).Select(match => new ReadmeSnippet(
            document,
            text.AsSpan(0, match.Index).Count('\n') + 1,
            match.Groups["code"].Value))];
    }

    [GeneratedRegex(@"^```csharp\n(?<code>.*?)^```", RegexOptions.Multiline | RegexOptions.Singleline)]
    private static partial Regex CSharpBlock();

    private static string FindRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "BoundedWork.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"BoundedWork.sln not found above {AppContext.BaseDirectory}.");
    }
}
