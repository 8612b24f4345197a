using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Where a document quotes the console's list of the fields an executor's PATCH takes ("the allowed fields are ..."), it
/// is the list a real console answers with, so no field (such as <c>pinned</c> or <c>pinFor</c>) is missing from it.
/// </summary>
public sealed partial class AllowedFieldsTests
{
    [Fact]
    public async Task AllowedFieldLists_InEveryDocument_AreTheConsolesOwn()
    {
        var problem = await RealConsole.SendAsync(HttpMethod.Patch, "/executors/payments", """{"speed": 1}""");
        var real = AllowedFields().Match(problem.GetProperty("detail").GetString()!);
        Assert.True(real.Success, problem.ToString());
        Assert.Contains("pinFor", real.Groups["fields"].Value, StringComparison.Ordinal);

        var found = 0;
        var stale = new List<string>();
        foreach (var document in Documentation.Documents)
        {
            var text = Documentation.Read(document);
            foreach (Match match in AllowedFields().Matches(text))
            {
                found++;
                if (match.Groups["fields"].Value != real.Groups["fields"].Value)
                {
                    stale.Add($"{document}:{text.AsSpan(0, match.Index).Count('\n') + 1} lists {match.Groups["fields"].Value}; the console's are {real.Groups["fields"].Value}");
                }
            }
        }

        Assert.True(found > 0, "No document quotes the allowed fields.");
        Assert.True(stale.Count == 0, string.Join("\n", stale));
    }

    [GeneratedRegex(@"the allowed fields are (?<fields>[a-zA-Z]+(?:, [a-zA-Z]+)*)\.")]
    private static partial Regex AllowedFields();
}
