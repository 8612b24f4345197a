using System.Collections.Immutable;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Compiles documentation snippets as a reader's project would: C# latest, nullable on, the implicit usings of a plain
/// SDK project (so a snippet shows every other using it needs), against the assemblies of the packages its section
/// names (<see cref="SnippetPackages"/>: the core package alone gets the .NET shared framework only), with the type declarations the caller
/// passes (<see cref="Documentation.DeclarationsFor(string, string?)"/>: the same document's and the shared example
/// types page's) and nothing else: every type an example uses is defined where the reader can see it.
/// </summary>
internal static class SnippetCompiler
{
    private const string ImplicitUsings = """
        global using System;
        global using System.Collections.Generic;
        global using System.IO;
        global using System.Linq;
        global using System.Net.Http;
        global using System.Threading;
        global using System.Threading.Tasks;
        """;

    private static readonly CSharpParseOptions ParseOptions = new(LanguageVersion.Latest);

    private static readonly Lazy<ImmutableArray<(string Path, MetadataReference Reference)>> References = new(() =>
    [
        .. ((string)AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES")!)
            .Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .Select(path => (path, (MetadataReference)MetadataReference.CreateFromFile(path))),
    ]);

    /// <summary>Whether a snippet is a program (top-level statements) rather than type declarations.</summary>
    public static bool IsProgram(string code) =>
        CSharpSyntaxTree.ParseText(code, ParseOptions).GetCompilationUnitRoot().Members.OfType<GlobalStatementSyntax>().Any();

    /// <summary>
    /// Compiles <paramref name="snippet"/> with the declaration snippets of its document; returns the errors. With
    /// <paramref name="packages"/>, only the assemblies a project referencing those packages has are referenced
    /// (<see cref="SnippetPackages.Includes"/>): a core snippet sees neither ASP.NET Core nor the hosting package.
    /// </summary>
    public static IReadOnlyList<string> Compile(string snippet, IEnumerable<string> declarationSnippets, IReadOnlySet<string>? packages = null)
    {
        var trees = new List<SyntaxTree>
        {
            CSharpSyntaxTree.ParseText(snippet, ParseOptions, path: "Snippet.cs"),
            CSharpSyntaxTree.ParseText(ImplicitUsings, ParseOptions, path: "GlobalUsings.cs"),
        };
        var i = 0;
        trees.AddRange(declarationSnippets.Where(other => other != snippet)
            .Select(other => CSharpSyntaxTree.ParseText(other, ParseOptions, path: $"Declarations{i++}.cs")));
        var compilation = CSharpCompilation.Create(
            "Snippet",
            trees,
            References.Value.Where(r => SnippetPackages.Includes(packages, r.Path)).Select(r => r.Reference),
            new CSharpCompilationOptions(
                IsProgram(snippet) ? OutputKind.ConsoleApplication : OutputKind.DynamicallyLinkedLibrary,
                nullableContextOptions: NullableContextOptions.Enable));
        using var output = new MemoryStream();
        var result = compilation.Emit(output);
        return [.. result.Diagnostics.Where(d => d.Severity == DiagnosticSeverity.Error).Select(d => d.ToString())];
    }
}
