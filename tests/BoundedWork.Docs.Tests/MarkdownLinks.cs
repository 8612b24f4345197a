using System.Text;
using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Checks a document's relative links the way GitHub resolves them: the target file exists (relative to the
/// document's folder), and a <c>#anchor</c> names a heading of the target (or of the document itself) by its GitHub
/// slug, or an explicit <c>id</c>/<c>name</c>. Links in fenced code blocks and in inline code are not links.
/// </summary>
internal static partial class MarkdownLinks
{
    /// <summary>Every broken relative link of <paramref name="document"/> (relative to <paramref name="root"/>), one message each.</summary>
    public static IReadOnlyList<string> FindBroken(string root, string document)
    {
        var broken = new List<string>();
        var path = Path.GetFullPath(Path.Combine(root, document));
        var text = File.ReadAllText(path).ReplaceLineEndings("\n");
        foreach (var (line, target) in Links(text))
        {
            if (Scheme().IsMatch(target))
            {
                continue; // https:, mailto: ...: not ours to check
            }

            var hash = target.IndexOf('#', StringComparison.Ordinal);
            var file = Uri.UnescapeDataString(hash < 0 ? target : target[..hash]);
            var anchor = hash < 0 ? null : Uri.UnescapeDataString(target[(hash + 1)..]);
            var targetPath = file.Length == 0 ? path : Path.GetFullPath(Path.Combine(Path.GetDirectoryName(path)!, file));
            if (!File.Exists(targetPath) && !Directory.Exists(targetPath))
            {
                broken.Add($"{document}:{line}: ({target}) names {file}, which does not exist");
                continue;
            }

            if (anchor is not null && targetPath.EndsWith(".md", StringComparison.OrdinalIgnoreCase)
                && !Anchors(File.ReadAllText(targetPath).ReplaceLineEndings("\n")).Contains(anchor))
            {
                broken.Add($"{document}:{line}: ({target}) names #{anchor}, which is no heading of {(file.Length == 0 ? "the document itself" : file)}");
            }
        }

        return broken;
    }

    /// <summary>
    /// The link targets of a markdown text outside code, with the line each target is on (a link's text may wrap onto
    /// the next line).
    /// </summary>
    public static IEnumerable<(int Line, string Target)> Links(string text)
    {
        var inCode = false;
        var lines = text.Split('\n');
        for (var i = 0; i < lines.Length; i++)
        {
            var fence = lines[i].TrimStart().StartsWith("```", StringComparison.Ordinal);
            if (fence)
            {
                inCode = !inCode;
            }

            lines[i] = fence || inCode ? "" : InlineCode().Replace(lines[i], "");
        }

        var masked = string.Join('\n', lines);
        foreach (Match link in Link().Matches(masked))
        {
            var target = link.Groups["target"];
            yield return (masked.AsSpan(0, target.Index).Count('\n') + 1, target.Value);
        }
    }

    /// <summary>The anchors a markdown text defines: each heading's GitHub slug (repeats get -1, -2, ...), and explicit ids.</summary>
    public static HashSet<string> Anchors(string text)
    {
        var anchors = new HashSet<string>(StringComparer.Ordinal);
        var seen = new Dictionary<string, int>(StringComparer.Ordinal);
        var inCode = false;
        foreach (var line in text.Split('\n'))
        {
            if (line.TrimStart().StartsWith("```", StringComparison.Ordinal))
            {
                inCode = !inCode;
                continue;
            }

            if (inCode)
            {
                continue;
            }

            var heading = Heading().Match(line);
            if (heading.Success)
            {
                var slug = Slug(heading.Groups["text"].Value);
                var count = seen.GetValueOrDefault(slug);
                seen[slug] = count + 1;
                anchors.Add(count == 0 ? slug : $"{slug}-{count}");
            }

            foreach (Match id in ExplicitId().Matches(line))
            {
                anchors.Add(id.Groups["id"].Value);
            }
        }

        return anchors;
    }

    /// <summary>
    /// GitHub's heading slug: lower case, every character that is not a letter, a digit, a space, a hyphen or an
    /// underscore removed (backquotes, colons, apostrophes, dots...), then each space a hyphen.
    /// </summary>
    public static string Slug(string heading)
    {
        var slug = new StringBuilder(heading.Length);
        foreach (var c in heading.Trim().ToLowerInvariant())
        {
            if (char.IsLetterOrDigit(c) || c is '-' or '_')
            {
                slug.Append(c);
            }
            else if (c == ' ')
            {
                slug.Append('-');
            }
        }

        return slug.ToString();
    }

    [GeneratedRegex(@"!?\[[^\]]*\]\((?<target>[^)\s]+)(?:\s+""[^""]*"")?\)")]
    private static partial Regex Link();

    [GeneratedRegex(@"`[^`\n]*`")]
    private static partial Regex InlineCode();

    [GeneratedRegex(@"^[a-zA-Z][a-zA-Z0-9+.-]*:")]
    private static partial Regex Scheme();

    [GeneratedRegex(@"^#{1,6}\s+(?<text>.*?)\s*#*\s*$")]
    private static partial Regex Heading();

    [GeneratedRegex(@"<a\s+(?:id|name)=""(?<id>[^""]+)""")]
    private static partial Regex ExplicitId();
}
