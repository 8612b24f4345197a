namespace BoundedWork.Docs.Tests;

public sealed class DocumentSnippetTests
{
    public static TheoryData<DocumentSnippet> Snippets()
    {
        var data = new TheoryData<DocumentSnippet>();
        foreach (var document in Documentation.Documents)
        {
            foreach (var snippet in Documentation.SnippetsIn(document))
            {
                data.Add(snippet);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Snippets))]
    public void Snippet_Compiles(DocumentSnippet snippet)
    {
        ArgumentNullException.ThrowIfNull(snippet);

        var errors = SnippetCompiler.Compile(snippet.Code, Documentation.DeclarationsFor(snippet.Document, snippet.Packages), snippet.Packages);

        var packages = snippet.Packages is null ? "every package" : string.Join(", ", snippet.Packages.Order(StringComparer.Ordinal));
        Assert.True(errors.Count == 0, $"The snippet at {snippet} does not compile with only the packages its section names ({packages}):\n{string.Join("\n", errors)}\n\n{snippet.Code}");
    }

    [Fact]
    public void Documents_AreTheReadmeEveryDocsPageAndEveryPackageReadme()
    {
        var expected = new[] { "README.md" }
            .Concat(Directory.GetFiles(Path.Combine(Documentation.RepositoryRoot, "docs"), "*.md").Select(p => "docs/" + Path.GetFileName(p)))
            .Concat(Directory.GetDirectories(Path.Combine(Documentation.RepositoryRoot, "src")).Where(d => File.Exists(Path.Combine(d, "README.md"))).Select(d => $"src/{Path.GetFileName(d)}/README.md"))
            .Order(StringComparer.Ordinal);

        Assert.Equal(expected, Documentation.Documents);
        Assert.Superset(
            new HashSet<string>(["README.md", "docs/index.md", "docs/design.md", "docs/executor.md", "docs/hosting.md", "docs/admin-console.md", "docs/dashboard.md", "docs/cli.md", "docs/legacy-code.md", "docs/typed-queues.md", "docs/durable-queues.md", "docs/metrics-and-events.md", "docs/performance.md", Documentation.ExampleTypesPage, "src/BoundedWork/README.md", "src/BoundedWork.Hosting/README.md", "src/BoundedWork.WorkQueues/README.md", "src/BoundedWork.AspNetCore/README.md", "src/BoundedWork.PostgreSql/README.md", "src/BoundedWork.Cli/README.md"]),
            Documentation.Documents.ToHashSet());
    }

    [Theory]
    [InlineData("README.md", 5)]
    [InlineData("docs/executor.md", 3)]
    [InlineData("docs/hosting.md", 5)]
    [InlineData("docs/admin-console.md", 2)]
    [InlineData("docs/legacy-code.md", 3)]
    [InlineData("docs/typed-queues.md", 2)]
    [InlineData("docs/durable-queues.md", 5)]
    [InlineData("docs/example-types.md", 1)]
    [InlineData("src/BoundedWork/README.md", 1)]
    [InlineData("src/BoundedWork.Hosting/README.md", 1)]
    [InlineData("src/BoundedWork.WorkQueues/README.md", 1)]
    [InlineData("src/BoundedWork.AspNetCore/README.md", 1)]
    [InlineData("src/BoundedWork.PostgreSql/README.md", 1)]
    [InlineData("src/BoundedWork.Cli/README.md", 1)]
    public void Document_HasItsSnippets(string document, int atLeast)
    {
        Assert.True(Documentation.SnippetsIn(document).Count >= atLeast, $"{document} has fewer than {atLeast} C# snippets: the extraction found {Documentation.SnippetsIn(document).Count}.");
    }

    /// <summary>
    /// The README's first snippet is a console app with the core package only: it compiles against that package and the
    /// .NET shared framework, with the part of the examples' types page that names the core package (which therefore
    /// needs nothing from BoundedWork.Hosting), and it prints its outcome.
    /// </summary>
    [Fact]
    public void CoreQuickStart_CompilesWithTheCorePackageOnly_AndPrintsTheOutcome()
    {
        var snippet = Documentation.SnippetsIn("README.md").First(s => s.Code.Contains("new BoundedExecutor(", StringComparison.Ordinal));

        Assert.Equal(["BoundedWork"], snippet.Packages!);
        Assert.Empty(SnippetCompiler.Compile(snippet.Code, Documentation.DeclarationsFor("README.md", snippet.Packages), snippet.Packages));
        Assert.Contains("Console.WriteLine(", snippet.Code, StringComparison.Ordinal);
    }

    [Fact]
    public void ExampleTypes_ThePartForEveryExample_NeedsOnlyTheCorePackage()
    {
        var core = new HashSet<string>(["BoundedWork"]);
        var shared = Documentation.SnippetsIn(Documentation.ExampleTypesPage).Where(s => SnippetPackages.Covers(core, s.Packages)).ToList();

        Assert.Contains(shared, s => s.Code.Contains("class LegacyCrm", StringComparison.Ordinal));
        Assert.Empty(SnippetCompiler.Compile("var crm = new LegacyCrm();", shared.Select(s => s.Code), core));
    }

    [Fact]
    public void Compile_CoreSnippetUsingTheHostingPackage_ReportsTheMissingNamespace()
    {
        const string hosting = """
            using BoundedWork.Hosting;

            Console.WriteLine(typeof(IBoundedExecutorRegistry));
            """;

        Assert.Contains(SnippetCompiler.Compile(hosting, [], new HashSet<string>(["BoundedWork"])), error => error.Contains("CS0234", StringComparison.Ordinal));
        Assert.Empty(SnippetCompiler.Compile(hosting, [], SnippetPackages.Closure(["BoundedWork.Hosting"])));
    }

    /// <summary>
    /// Typed work queues are a package of their own: a snippet whose section names only BoundedWork.Hosting cannot use
    /// them (the types keep the namespace BoundedWork.Hosting, so the error is the missing type, not the namespace).
    /// </summary>
    [Fact]
    public void Compile_HostingSnippetUsingTypedQueues_NeedsTheWorkQueuesPackage()
    {
        const string queues = """
            using BoundedWork.Hosting;

            Console.WriteLine(typeof(IWorkQueue<string>));
            """;

        Assert.Contains(SnippetCompiler.Compile(queues, [], SnippetPackages.Closure(["BoundedWork.Hosting"])), error => error.Contains("CS0246", StringComparison.Ordinal));
        Assert.Empty(SnippetCompiler.Compile(queues, [], SnippetPackages.Closure(["BoundedWork.WorkQueues"])));
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

        var errors = SnippetCompiler.Compile(broken, Documentation.DeclarationsFor("README.md"));

        Assert.Contains(errors, error => error.Contains("CS8820", StringComparison.Ordinal)); // a static lambda cannot capture mailer
    }

    [Fact]
    public void Compile_SnippetUsingATypeNoSnippetDefines_ReportsTheError()
    {
        const string undefined = """
            var payments = new LegacyPayments();
            var ledger = new SomeoneElsesLedger();
            """;

        var errors = SnippetCompiler.Compile(undefined, Documentation.DeclarationsFor("README.md"));

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

    /// <summary>
    /// A page found by the glob is compiled the same way: in a fixture repository with a README, a shared types page
    /// and a new page, the new page's broken block is reported, its good one compiles with the shared types, and its
    /// own declaration of a shared type's name replaces the shared one instead of clashing with it.
    /// </summary>
    [Fact]
    public void Fixture_NewDocsPage_IsFoundAndItsBrokenSnippetFails()
    {
        var root = Directory.CreateTempSubdirectory("docs-fixture").FullName;
        try
        {
            Directory.CreateDirectory(Path.Combine(root, "docs"));
            File.WriteAllText(Path.Combine(root, "README.md"), "# Fixture\n");
            File.WriteAllText(Path.Combine(root, Documentation.ExampleTypesPage), """
                # Types

                ```csharp
                public sealed record Customer(int Id);
                public sealed record PaymentNotice(string OrderId, decimal Amount);
                ```
                """);
            File.WriteAllText(Path.Combine(root, "docs", "new-page.md"), """
                # A page added later

                ```csharp
                var customer = new Customer(7);
                var notice = new PaymentNotice(3);
                Console.WriteLine($"{customer} {notice.Cents}");
                ```

                ```csharp
                public sealed record PaymentNotice(long Cents);
                ```

                ```csharp
                var customer = new Customer("seven");
                ```
                """);

            Assert.Contains("docs/new-page.md", Documentation.Discover(root));
            var snippets = Documentation.SnippetsIn("docs/new-page.md", root);
            Assert.Equal([3, 9, 13], snippets.Select(s => s.Line));
            var declarations = Documentation.DeclarationsFor("docs/new-page.md", root);

            Assert.Empty(SnippetCompiler.Compile(snippets[0].Code, declarations));
            Assert.Contains(SnippetCompiler.Compile(snippets[2].Code, declarations), error => error.Contains("CS1503", StringComparison.Ordinal));
        }
        finally
        {
            Directory.Delete(root, recursive: true);
        }
    }

    [Theory]
    [InlineData("PaymentCallbacks.cs")]
    [InlineData("PaymentOutbox.cs")]
    public void ShutdownSnippets_RunInTheProcessShutdownTest_AreTheHostingPagesVerbatim(string file)
    {
        var tested = File.ReadAllText(Path.Combine(Documentation.RepositoryRoot, "tests", "BoundedWork.Hosting.TestHost", "Snippets", file)).ReplaceLineEndings("\n");

        Assert.Contains(tested, Documentation.SnippetsIn("docs/hosting.md").Select(s => s.Code));
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
        foreach (var document in Documentation.Documents.Append("benchmarks/README.md").Append("CHANGELOG.md"))
        {
            var text = Documentation.Read(document);
            Assert.False(text.Contains(phrase, StringComparison.OrdinalIgnoreCase), $"{document} mentions '{phrase}'.");
        }
    }
}
