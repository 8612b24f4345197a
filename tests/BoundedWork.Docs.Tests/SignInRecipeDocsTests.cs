using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// The admin console's sign-in recipe that the pages show is the one the browser test runs
/// (tests/BoundedWork.AspNetCore.Tests/SignInRecipeTests.cs signs in on its login page and sees the executors, and
/// reads them with a bearer token): each of its regions appears verbatim in a C# snippet of every page that shows the
/// recipe, so the pages cannot drift from what is proven to work.
/// </summary>
public sealed partial class SignInRecipeDocsTests
{
    [Theory]
    [InlineData("README.md")]
    [InlineData("docs/admin-console.md")]
    [InlineData("src/BoundedWork.AspNetCore/README.md")]
    public void SignInRecipe_OnThePage_IsTheOneTheBrowserTestRuns(string document)
    {
        var test = File.ReadAllText(Path.Combine(Documentation.RepositoryRoot, "tests", "BoundedWork.AspNetCore.Tests", "SignInRecipeTests.cs")).ReplaceLineEndings("\n");
        var regions = Region().Matches(test).Select(m => Dedent(m.Groups["code"].Value)).ToList();
        Assert.Equal(2, regions.Count);

        var snippets = Documentation.SnippetsIn(document).Select(s => s.Code).ToList();
        foreach (var region in regions)
        {
            Assert.True(snippets.Any(code => code.Contains(region, StringComparison.Ordinal)), $"{document} does not show this part of the tested sign-in recipe verbatim:\n{region}");
        }
    }

    private static string Dedent(string code)
    {
        var lines = code.Split('\n');
        var indent = lines.Where(l => l.Trim().Length > 0).Min(l => l.Length - l.TrimStart().Length);
        return string.Join("\n", lines.Select(l => l.Length >= indent ? l[indent..] : l.TrimStart()));
    }

    [GeneratedRegex(@"#region recipe-\w+\n(?<code>.*?)\n[ ]*#endregion", RegexOptions.Singleline)]
    private static partial Regex Region();
}
