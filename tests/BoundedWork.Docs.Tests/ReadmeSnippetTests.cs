namespace BoundedWork.Docs.Tests;

public sealed class ReadmeSnippetTests
{
    public static TheoryData<ReadmeSnippet> Snippets()
    {
        var data = new TheoryData<ReadmeSnippet>();
        foreach (var document in ReadmeSnippets.Documents)
        {
            foreach (var snippet in ReadmeSnippets.In(document))
            {
                data.Add(snippet);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Snippets))]
    public void Snippet_Compiles(ReadmeSnippet snippet)
    {
        ArgumentNullException.ThrowIfNull(snippet);
        var declarations = ReadmeSnippets.In(snippet.Document).Select(s => s.Code).Where(code => !SnippetCompiler.IsProgram(code));

        var errors = SnippetCompiler.Compile(snippet.Code, declarations);

        Assert.True(errors.Count == 0, $"The snippet at {snippet} does not compile:\n{string.Join("\n", errors)}\n\n{snippet.Code}");
    }

    [Fact]
    public void Documents_EachPackageReadmeAndTheMainReadme_HaveSnippets()
    {
        Assert.Equal(["README.md", "src/BoundedWork.AspNetCore/README.md", "src/BoundedWork.Cli/README.md", "src/BoundedWork.Hosting/README.md", "src/BoundedWork.OpenTelemetry/README.md", "src/BoundedWork.PostgreSql/README.md", "src/BoundedWork/README.md"], ReadmeSnippets.Documents.Order(StringComparer.Ordinal));
        Assert.True(ReadmeSnippets.In("README.md").Count >= 6);
        Assert.All(ReadmeSnippets.Documents, document => Assert.NotEmpty(ReadmeSnippets.In(document)));
    }

    [Fact]
    public void Compile_SnippetThatDoesNotCompile_ReportsTheError()
    {
        const string broken = """
            using BoundedWork;

            var executor = new BoundedExecutor(new BoundedExecutorOptions());
            var mailer = new Mailer();
            var order = new Order(1, new Customer(1));
            executor.Execute(static o => mailer.SendReceipt(o), order);
            """;

        var errors = SnippetCompiler.Compile(broken, ReadmeSnippets.In("README.md").Select(s => s.Code).Where(code => !SnippetCompiler.IsProgram(code)));

        Assert.Contains(errors, error => error.Contains("CS8820", StringComparison.Ordinal)); // a static lambda cannot capture mailer
    }

    [Fact]
    public void Compile_SnippetUsingATypeNoSnippetDefines_ReportsTheError()
    {
        const string undefined = """
            var payments = new LegacyPayments();
            var ledger = new SomeoneElsesLedger();
            """;

        var errors = SnippetCompiler.Compile(undefined, ReadmeSnippets.In("README.md").Select(s => s.Code).Where(code => !SnippetCompiler.IsProgram(code)));

        Assert.Equal("SomeoneElsesLedger", Assert.Single(errors, error => error.Contains("CS0246", StringComparison.Ordinal)).Split('\'')[1]);
    }

    [Fact]
    public void Compile_SnippetMissingAUsing_ReportsTheError()
    {
        const string withoutUsing = """
            var executor = new BoundedExecutor(new BoundedExecutorOptions());
            """;

        Assert.Contains(SnippetCompiler.Compile(withoutUsing, []), error => error.Contains("CS0246", StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("PaymentCallbacks.cs")]
    [InlineData("PaymentOutbox.cs")]
    public void ShutdownSnippets_RunInTheProcessShutdownTest_AreTheReadmesVerbatim(string file)
    {
        var tested = File.ReadAllText(Path.Combine(ReadmeSnippets.RepositoryRoot, "tests", "BoundedWork.Hosting.TestHost", "Snippets", file)).ReplaceLineEndings("\n");

        Assert.Contains(tested, ReadmeSnippets.In("README.md").Select(s => s.Code));
    }

    [Theory]
    [InlineData("the issue")]
    [InlineData("issue's")]
    [InlineData("package source")]
    [InlineData("pasted into")]
    [InlineData("session")]
    [InlineData("helper")]
    public void UserDocs_SpeakToUsersOnly(string phrase)
    {
        foreach (var document in ReadmeSnippets.Documents.Append("benchmarks/README.md").Append("CHANGELOG.md"))
        {
            var text = File.ReadAllText(Path.Combine(ReadmeSnippets.RepositoryRoot, document));
            Assert.False(text.Contains(phrase, StringComparison.OrdinalIgnoreCase), $"{document} mentions '{phrase}'.");
        }
    }
}
