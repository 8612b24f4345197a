namespace BoundedWork.Docs.Tests;

public sealed class MarkdownLinkTests
{
    /// <summary>The documents users read, and the benchmarks' guide and results, which link into them.</summary>
    public static TheoryData<string> Documents() => [.. Documentation.Documents.Append("benchmarks/README.md").Append("benchmarks/RESULTS.md")];

    [Theory]
    [MemberData(nameof(Documents))]
    public void RelativeLinks_Resolve(string document)
    {
        var broken = MarkdownLinks.FindBroken(Documentation.RepositoryRoot, document);

        Assert.True(broken.Count == 0, string.Join("\n", broken));
    }

    [Fact]
    public void RelativeLinks_AreChecked_InEveryDocument()
    {
        // The README and the index link to the pages; a link checker that found none would check nothing.
        Assert.True(MarkdownLinks.Links(Documentation.Read("README.md")).Count(l => l.Target.StartsWith("docs/", StringComparison.Ordinal)) >= 10);
        Assert.True(MarkdownLinks.Links(Documentation.Read("docs/index.md")).Count() >= 12);
    }

    [Fact]
    public void FindBroken_MissingFileOrAnchor_IsReported_AndGoodLinksAreNot()
    {
        var root = Directory.CreateTempSubdirectory("links-fixture").FullName;
        try
        {
            Directory.CreateDirectory(Path.Combine(root, "docs"));
            File.WriteAllText(Path.Combine(root, "docs", "b.md"), """
                # Page B

                ## Hosting: `BoundedWork.Hosting`

                ## Notes

                ## Notes

                ```bash
                # Not a heading
                ```
                """);
            File.WriteAllText(Path.Combine(root, "README.md"), """
                # Fixture

                ## The examples' own types

                Good: [b](docs/b.md), [hosting](docs/b.md#hosting-boundedworkhosting), [second notes](docs/b.md#notes-1),
                [wrapped
                text](#the-examples-own-types), ![picture](docs/b.md), [web](https://example.com/x.md#nowhere).
                Broken: [gone](docs/gone.md), [no anchor](docs/b.md#not-a-heading), [third notes](docs/b.md#notes-2),
                [code comment](docs/b.md#not-a-heading-1), [local](#nowhere).
                Not links: `[in code](docs/gone.md)`.

                ```markdown
                [in a block](docs/gone.md)
                ```
                """);

            var broken = MarkdownLinks.FindBroken(root, "README.md");

            Assert.Equal(5, broken.Count);
            Assert.Contains(broken, b => b.StartsWith("README.md:8: (docs/gone.md)", StringComparison.Ordinal));
            Assert.Contains(broken, b => b.Contains("#not-a-heading,", StringComparison.Ordinal));
            Assert.Contains(broken, b => b.Contains("#notes-2", StringComparison.Ordinal));
            Assert.Contains(broken, b => b.Contains("#not-a-heading-1", StringComparison.Ordinal));
            Assert.Contains(broken, b => b.StartsWith("README.md:9: (#nowhere)", StringComparison.Ordinal));
        }
        finally
        {
            Directory.Delete(root, recursive: true);
        }
    }

    [Theory]
    [InlineData("Hosting: `BoundedWork.Hosting`", "hosting-boundedworkhosting")]
    [InlineData("The examples' own types", "the-examples-own-types")]
    [InlineData("Dead letters: browse, requeue, purge", "dead-letters-browse-requeue-purge")]
    [InlineData("In an incident: the `bw` tool", "in-an-incident-the-bw-tool")]
    [InlineData("How `bw doctor` decides", "how-bw-doctor-decides")]
    [InlineData("Retry an enqueue safely: idempotency keys", "retry-an-enqueue-safely-idempotency-keys")]
    [InlineData("Under a starved ThreadPool", "under-a-starved-threadpool")]
    [InlineData("snake_case and 1.0 - two", "snake_case-and-10---two")]
    public void Slug_IsGitHubs(string heading, string slug) => Assert.Equal(slug, MarkdownLinks.Slug(heading));
}
