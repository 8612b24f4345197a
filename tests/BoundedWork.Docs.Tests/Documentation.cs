using System.Text.RegularExpressions;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// One fenced <c>csharp</c> block of a document, and the packages its section names (<see cref="Packages"/>: what a
/// reader's project would reference to compile it; <see langword="null"/> for a section that names none: every package).
/// </summary>
public sealed record DocumentSnippet(string Document, int Line, string Code, IReadOnlySet<string>? Packages = null)
{
    public override string ToString() => $"{Document}:{Line}";
}

/// <summary>
/// Finds the user documentation and its C# snippets: the repository's README, every page under <c>docs/</c> and every
/// package README under <c>src/</c>, discovered by glob, so a page added later is covered without a change here.
/// </summary>
internal static partial class Documentation
{
    /// <summary>The page that holds the minimal versions of the app's own types every example may use.</summary>
    public const string ExampleTypesPage = "docs/example-types.md";

    public static string RepositoryRoot { get; } = FindRoot();

    /// <summary>The documents users read, as paths relative to the repository root with forward slashes.</summary>
    public static IReadOnlyList<string> Documents { get; } = Discover(RepositoryRoot);

    /// <summary>The documents under <paramref name="root"/>: README.md, docs/*.md and src/*/README.md.</summary>
    public static IReadOnlyList<string> Discover(string root)
    {
        var docs = Path.Combine(root, "docs");
        var src = Path.Combine(root, "src");
        return
        [
            .. new[] { Path.Combine(root, "README.md") }.Where(File.Exists)
                .Concat(Directory.Exists(docs) ? Directory.GetFiles(docs, "*.md") : [])
                .Concat(Directory.Exists(src) ? Directory.GetDirectories(src).Select(d => Path.Combine(d, "README.md")).Where(File.Exists) : [])
                .Select(path => Path.GetRelativePath(root, path).Replace('\\', '/'))
                .Order(StringComparer.Ordinal),
        ];
    }

    public static string Read(string document, string? root = null) =>
        File.ReadAllText(Path.Combine(root ?? RepositoryRoot, document)).ReplaceLineEndings("\n");

    public static IReadOnlyList<DocumentSnippet> SnippetsIn(string document, string? root = null) => SnippetsInText(document, Read(document, root));

    public static IReadOnlyList<DocumentSnippet> SnippetsInText(string document, string text)
    {
        text = text.ReplaceLineEndings("\n");
        return [.. CSharpBlock().Matches(text).Select(match => new DocumentSnippet(
            document,
            text.AsSpan(0, match.Index).Count('\n') + 1,
            match.Groups["code"].Value,
            SnippetPackages.Named(document, text[..match.Index])))];
    }

    /// <summary>
    /// The type declarations a snippet of <paramref name="document"/> compiles with: the document's own declaration
    /// snippets, then those of <see cref="ExampleTypesPage"/> without the types any snippet of the document declares
    /// itself (a page may define its own <c>PaymentNotice</c>; the shared one then stays out of its way).
    /// </summary>
    public static IReadOnlyList<string> DeclarationsFor(string document, string? root = null) => DeclarationsFor(document, packages: null, root);

    /// <summary>
    /// As <see cref="DeclarationsFor(string, string?)"/>, keeping only the declaration snippets whose own packages a
    /// project with <paramref name="packages"/> has (all of them when <paramref name="packages"/> is <see langword="null"/>).
    /// </summary>
    public static IReadOnlyList<string> DeclarationsFor(string document, IReadOnlySet<string>? packages, string? root = null) =>
        DeclarationsFor(SnippetsIn(document, root), document == ExampleTypesPage || !File.Exists(Path.Combine(root ?? RepositoryRoot, ExampleTypesPage))
            ? []
            : SnippetsIn(ExampleTypesPage, root), packages);

    public static IReadOnlyList<string> DeclarationsFor(IEnumerable<DocumentSnippet> own, IEnumerable<DocumentSnippet> shared, IReadOnlySet<string>? packages = null)
    {
        var ownCode = own.Select(s => s.Code).ToList();
        var ownDeclarations = own.Where(s => !SnippetCompiler.IsProgram(s.Code) && SnippetPackages.Covers(packages, s.Packages)).Select(s => s.Code).ToList();
        var declared = ownCode.SelectMany(TypeNames).ToHashSet(StringComparer.Ordinal);
        var result = new List<string>(ownDeclarations);
        foreach (var code in shared.Where(s => SnippetPackages.Covers(packages, s.Packages)).Select(s => s.Code).Where(code => !SnippetCompiler.IsProgram(code)))
        {
            var root = CSharpSyntaxTree.ParseText(code).GetCompilationUnitRoot();
            var clashes = root.Members.OfType<BaseTypeDeclarationSyntax>().Where(t => declared.Contains(t.Identifier.Text)).Cast<MemberDeclarationSyntax>()
                .Concat(root.Members.OfType<DelegateDeclarationSyntax>().Where(d => declared.Contains(d.Identifier.Text)))
                .ToList();
            result.Add(clashes.Count == 0 ? code : root.RemoveNodes(clashes, SyntaxRemoveOptions.KeepNoTrivia)!.ToFullString());
        }

        return result;
    }

    private static IEnumerable<string> TypeNames(string code)
    {
        var root = CSharpSyntaxTree.ParseText(code).GetCompilationUnitRoot();
        return root.DescendantNodes().OfType<BaseTypeDeclarationSyntax>().Select(t => t.Identifier.Text)
            .Concat(root.DescendantNodes().OfType<DelegateDeclarationSyntax>().Select(d => d.Identifier.Text));
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
