// A class graph with a back reference is refused as unserializable.
// expect-error: Unserializable
// expect-message: result.children[0].parent is the value at result again, inside itself (a cycle)
class TreeNode { children: TreeNode[] = []; constructor(public parent?: TreeNode) { parent?.children.push(this); } }
const root = new TreeNode();
new TreeNode(root);
root;
